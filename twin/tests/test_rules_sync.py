# SPDX-License-Identifier: BSD-3-Clause
"""The rules of synchronisation: cross-pipe hazards without a flag, SetFlag / WaitFlag pairing, SyncAll
across cores, and the TPipe's event ids (8 per hardware event, held by EnQue, FreeTensor and
AllocEventID); each broken by one row of a kernel and kept by the same row fixed (rule_kernels.py)."""
from rule_kernels import Rule, kernel_source, rule_tests

RULES = [
    Rule("missing_flag_mte2_v", """
    TBuf<TPosition::VECCALC> in, out;
    pipe.InitBuffer(in, 256);
    pipe.InitBuffer(out, 256);
    LocalTensor<float> a = in.Get<float>(), b = out.Get<float>();
    DataCopy(a, xg, 64);
    if (!BAD) {
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    }
    DataCopy(b, a, 64);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(yg, b, 64);
""", "DataCopy", "data written by one pipe and then read by another needs EnQue/DeQue of the buffer, "
     "SetFlag/WaitFlag<HardEvent::MTE2_V>"),
    Rule("queue_pipes", """
    TQue<QuePosition::VECIN, 1> in;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> through;
    pipe.InitBuffer(in, 1, 256);
    pipe.InitBuffer(through, 1, 256);
    LocalTensor<float> a = BAD ? in.AllocTensor<float>() : through.AllocTensor<float>();
    DataCopy(a, xg, 64);
    if (BAD) in.EnQue(a); else through.EnQue(a);
    a = BAD ? in.DeQue<float>() : through.DeQue<float>();
    DataCopy(yg, a, 64);  // a VECIN queue hands its buffer to V, not to MTE3
    if (BAD) in.FreeTensor(a); else through.FreeTensor(a);
""", "DataCopy", "SetFlag/WaitFlag<HardEvent::MTE2_MTE3> or PipeBarrier<PIPE_ALL> in between (MTE2 wrote, MTE3 "
     "reads the TQue buffer"),
    Rule("write_after_read", """
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    LocalTensor<float> a = buf.Get<float>();
    DataCopy(a, xg, 64);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID1);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID1);
    DataCopy(yg, a, 64);
    if (!BAD) PipeBarrier<PIPE_ALL>();
    DataCopy(a, xg[64], 64);
    PipeBarrier<PIPE_ALL>();
""", "DataCopy", "data read by one pipe and then overwritten by another needs EnQue/DeQue of the buffer, "
     "SetFlag/WaitFlag<HardEvent::MTE3_MTE2>"),
    Rule("wait_without_set", """
    if (!BAD) SetFlag<HardEvent::V_MTE3>(EVENT_ID2);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID2);
""", "WaitFlag", "a WaitFlag needs a matching SetFlag before it (HardEvent::V_MTE3, event id 2"),
    Rule("set_never_waited", """
    SetFlag<HardEvent::MTE3_V>(EVENT_ID3);
    if (!BAD) WaitFlag<HardEvent::MTE3_V>(EVENT_ID3);
""", "SetFlag", "every SetFlag needs its WaitFlag before the kernel ends (HardEvent::MTE3_V, event id 3)"),
    Rule("sync_all_some_cores", """
    if (BAD && GetBlockIdx() == 3) return;
    SyncAll();
""", "SyncAll", "core 3 returned from the kernel without reaching SyncAll", core="[012]", block_dim=4),
    Rule("sync_all_workspace", """
    TBuf<TPosition::VECCALC> flags;
    pipe.InitBuffer(flags, GetBlockNum() * 32);
    GlobalTensor<int32_t> wg;
    wg.SetGlobalBuffer((__gm__ int32_t *)ws, (GetBlockNum() - BAD) * 8);
    SyncAll(wg, flags.Get<int32_t>());
""", "SyncAll", "gmWorkspace must hold at least block num x 32 bytes (96 bytes < 128)", core="[0-3]",
         block_dim=4),
    Rule("event_id_range", """
    SetFlag<HardEvent::V_S>(7 + BAD);
    WaitFlag<HardEvent::V_S>(7);
""", "SetFlag", "the event id must be in [0, 8) (got 8)"),
    # Event ids: 8 per hardware event per TPipe. Each EnQue holds one of MTE2_V until its DeQue.
    Rule("enque_event_ids", """
    TQue<QuePosition::VECIN, 16> q;
    pipe.InitBuffer(q, 9, 256);
    LocalTensor<float> t[9];
    for (int i = 0; i < 8 + BAD; ++i) {
        t[i] = q.AllocTensor<float>();
        DataCopy(t[i], xg[64 * i], 64);
        q.EnQue(t[i]);
    }
    for (int i = 0; i < 8 + BAD; ++i) {
        t[i] = q.DeQue<float>();
        q.FreeTensor(t[i]);
    }
""", "TQue::EnQue", "at most 8 event ids of HardEvent::MTE2_V per TPipe may be in flight (QUE_MAX_EVENT); each EnQue "
     "holds one until its DeQue (8 in flight: 8 held by this queue (16-deep, 9 buffers from UB offset 0), 0 by other "
     "queues, 0 by AllocEventID)"),
    # The reverse event: each FreeTensor holds one of V_MTE2 until that buffer is allocated again; the
    # cursor hands out the queue's other buffers first, so five rounds of one queue hold five ids.
    Rule("free_event_ids", """
    TQue<QuePosition::VECIN, 1> a, b;
    pipe.InitBuffer(a, 5, 256);
    pipe.InitBuffer(b, 4, 256);
    for (int i = 0; i < 5; ++i) {
        LocalTensor<float> t = a.AllocTensor<float>();
        a.FreeTensor(t);
    }
    for (int i = 0; i < 3 + BAD; ++i) {
        LocalTensor<float> t = b.AllocTensor<float>();
        b.FreeTensor(t);
    }
""", "TQue::FreeTensor", "each FreeTensor holds one until its buffer's next AllocTensor (8 in flight: 3 held by this "
     "queue (1-deep, 4 buffers from UB offset 1280), 5 by other queues, 0 by AllocEventID)"),
    Rule("alloc_event_ids", """
    TEventID ids[9];
    for (int i = 0; i < 8 + BAD; ++i) ids[i] = pipe.AllocEventID<HardEvent::V_MTE3>();
    for (int i = 0; i < 8 + BAD; ++i) pipe.ReleaseEventID<HardEvent::V_MTE3>(ids[i]);
""", "TPipe::AllocEventID", "each AllocEventID holds one until its ReleaseEventID (8 in flight: 8 held by "
     "AllocEventID, 0 by queues)"),
    Rule("fetch_event_id_none_free", """
    TEventID ids[8];
    for (int i = 0; i < 8; ++i) ids[i] = pipe.AllocEventID<HardEvent::MTE2_S>();
    if (!BAD) pipe.ReleaseEventID<HardEvent::MTE2_S>(ids[7]);
    const TEventID id = pipe.FetchEventID(HardEvent::MTE2_S);
    SetFlag<HardEvent::MTE2_S>(id);
    WaitFlag<HardEvent::MTE2_S>(id);
    for (int i = 0; i < 7; ++i) pipe.ReleaseEventID<HardEvent::MTE2_S>(ids[i]);
""", "TPipe::FetchEventID", "a free event id is needed, at most 8 of HardEvent::MTE2_S per TPipe"),
    Rule("release_unheld_event_id", """
    const TEventID id = pipe.AllocEventID<HardEvent::V_S>();
    pipe.ReleaseEventID<HardEvent::V_S>(id);
    if (BAD) pipe.ReleaseEventID<HardEvent::V_S>(id);
""", "TPipe::ReleaseEventID", "the id must be one AllocEventID handed out and not yet released (HardEvent::V_S, "
     "event id 0, not held; stricter than CANN"),
    Rule("event_id_held_by_queue", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, xg, 64);
    q.EnQue(t);
    const int32_t id = BAD ? EVENT_ID0 : pipe.FetchEventID(HardEvent::MTE2_V);
    SetFlag<HardEvent::MTE2_V>(id);
    WaitFlag<HardEvent::MTE2_V>(id);
    t = q.DeQue<float>();
    q.FreeTensor(t);
""", "SetFlag", "the event id must not be one a queue holds (HardEvent::MTE2_V, event id 0 is held by an EnQue or "
     "FreeTensor"),
]
SOURCE = kernel_source(RULES)
test_broken_rule_is_named, test_fixed_kernel_runs = rule_tests(RULES, SOURCE)
