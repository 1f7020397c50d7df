"""Each row: a small kernel that breaks one Ascend C rule when run with BAD=1 and keeps it with
BAD=0. The broken one must fail with an error naming the core, the call and the rule (a rule the
launch harness checks afterwards, core None, names the GM buffer instead); the fixed one must run. (The vector-instruction rules are in the VECTOR engineer's test files.)"""
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import params, run

N = 8192  # float32 elements of x and y

# One kernel holds every row (one compile): params = [row index, BAD]. It takes x (random float32),
# y (zeros) and ws (int32 zeros, 32 bytes per core).
HEAD = """
extern "C" __global__ __aicore__ void rule(GM_ADDR x, GM_ADDR y, GM_ADDR ws, GM_ADDR params)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)params, 2);
    const int32_t row = pg.GetValue(0), BAD = pg.GetValue(1);
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x);
    yg.SetGlobalBuffer((__gm__ float *)y);
    TPipe pipe;
    switch (row) {
"""


@dataclass
class Rule:
    name: str
    body: str
    call: str
    rule: str
    core: Optional[str] = "0"  # None: a rule the harness checks after the launch, on no core
    block_dim: int = 1


RULES = [
    Rule("ub_capacity", """
    TQue<QuePosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> scratch;
    pipe.InitBuffer(q, 2, 64 * 1024);
    pipe.InitBuffer(scratch, 196608 - 8448 - 2 * 64 * 1024 + BAD);  // one byte more rounds up to 32
""", "TPipe::InitBuffer", "all buffers must fit the Unified Buffer less its reserved part (buffers total 188192 "
     "bytes > limit 188160 bytes"),
    Rule("buffer_count", """
    TQue<QuePosition::VECIN, 1> a;
    TQue<QuePosition::VECOUT, 1> b;
    pipe.InitBuffer(a, 40, 32);
    pipe.InitBuffer(b, 24 + BAD, 32);
""", "TPipe::InitBuffer", "at most 64 buffers per kernel"),
    Rule("copy_length", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, xg, BAD ? 12 : 16);
    q.FreeTensor(t);
""", "DataCopy", "count * sizeof(T) must be a multiple of 32 bytes (12 elements of 4 bytes = 48 bytes"),
    Rule("ub_alignment", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t[BAD ? 4 : 8], xg, 8);
    q.FreeTensor(t);
""", "DataCopy", "the UB destination must start 32-byte aligned (UB byte offset 16)"),
    Rule("gm_bounds", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, xg[8192 - 16 + 8 * BAD], 16);
    q.FreeTensor(t);
""", "DataCopy", "the GM access must stay inside a buffer passed to the kernel"),
    Rule("alloc_all_out", """
    TQue<QuePosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    LocalTensor<float> b = q.AllocTensor<float>();
    if (!BAD) q.FreeTensor(a);
    LocalTensor<float> c = q.AllocTensor<float>();
    q.FreeTensor(b);
    q.FreeTensor(c);
""", "TQue::AllocTensor", "all 2 buffers of the queue are in use"),
    Rule("enque_depth", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    LocalTensor<float> b = q.AllocTensor<float>();
    DataCopy(a, xg, 64);
    DataCopy(b, xg, 64);
    q.EnQue(a);
    if (!BAD) { a = q.DeQue<float>(); q.FreeTensor(a); }
    q.EnQue(b);
    b = q.DeQue<float>();
    q.FreeTensor(b);
    if (BAD) { a = q.DeQue<float>(); q.FreeTensor(a); }
""", "TQue::EnQue", "at most depth = 1 tensors may be queued before a DeQue"),
    Rule("deque_empty", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    if (!BAD) q.EnQue(a);
    a = q.DeQue<float>();
    q.FreeTensor(a);
""", "TQue::DeQue", "the queue is empty"),
    Rule("use_after_free", """
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopy(a, xg, 64);
    q.EnQue(a);
    a = q.DeQue<float>();
    if (BAD) q.FreeTensor(a);
    DataCopy(yg, a, 64);
    if (!BAD) q.FreeTensor(a);
""", "DataCopy", "the LocalTensor is used after FreeTensor returned its buffer to the queue"),
    Rule("double_free", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    q.FreeTensor(a);
    if (BAD) q.FreeTensor(a);
""", "TQue::FreeTensor", "the tensor was already freed (FreeTensor twice)"),
    Rule("free_to_other_queue", """
    TQue<QuePosition::VECIN, 1> owner, other;
    pipe.InitBuffer(owner, 1, 256);
    pipe.InitBuffer(other, 1, 256);
    LocalTensor<float> a = owner.AllocTensor<float>();
    if (BAD) other.FreeTensor(a); else owner.FreeTensor(a);
""", "TQue::FreeTensor", "the tensor must come from this queue's AllocTensor"),
    Rule("never_freed", """
    TQue<QuePosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    if (!BAD) q.FreeTensor(a);
""", "TQue::AllocTensor", "every AllocTensor needs its FreeTensor before the kernel ends (buffer 0 of the queue "
     "is still allocated)"),
    Rule("tbuf_get_size", """
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> t = b.Get<float>(64 + BAD);
""", "TBuf::Get", "count must fit the buffer (65 elements of 4 bytes > 256 bytes)"),
    Rule("copy_out_unwritten", """
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopy(a, xg, BAD ? 56 : 64);
    q.EnQue(a);
    a = q.DeQue<float>();
    DataCopy(yg, a, 64);
    q.FreeTensor(a);
""", "run_kernel", "GM buffer args[1] holds undefined data after the launch: element 56 (byte offset 224)", core=None),
    Rule("pad_random_to_output", """
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopyPad(a, xg, DataCopyExtParams(1, 5 * sizeof(float), 0, 0, 0),
                DataCopyPadExtParams<float>(!BAD, 1, 1, 0.0f));
    q.EnQue(a);
    a = q.DeQue<float>();
    DataCopy(yg, a, 8);
    q.FreeTensor(a);
""", "run_kernel", "GM buffer args[1] holds undefined data after the launch: element 0 (byte offset 0)", core=None),
    Rule("pad_block_count", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 4096 * 32);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopyPad(a, xg, DataCopyExtParams(4095 + BAD, sizeof(float), 0, 0, 0), DataCopyPadExtParams<float>());
    q.FreeTensor(a);
""", "DataCopyPad", "blockCount must be in [1, 4095] (got 4096; stricter than CANN"),
    Rule("pad_width", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopyPad(a, xg, DataCopyExtParams(1, 4 * sizeof(float), 0, 0, 0),
                DataCopyPadExtParams<float>(true, 8 + BAD, 0, 0.0f));
    q.FreeTensor(a);
""", "DataCopyPad", "leftPadding and rightPadding must each be at most 32 bytes (9 and 0 elements"),
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
    Rule("enque_twice", """
    TQue<QuePosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopy(a, xg, 64);
    q.EnQue(a);
    if (BAD) q.EnQue(a);
    a = q.DeQue<float>();
    q.FreeTensor(a);
""", "TQue::EnQue", "the tensor is already queued (EnQue once per AllocTensor or DeQue)"),
    Rule("free_queued", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopy(a, xg, 64);
    q.EnQue(a);
    if (!BAD) a = q.DeQue<float>();
    q.FreeTensor(a);
""", "TQue::FreeTensor", "the tensor is still queued (DeQue it before FreeTensor)"),
    Rule("init_buffer_twice", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    if (!BAD) pipe.Reset();
    pipe.InitBuffer(q, 1, 512);
""", "TPipe::InitBuffer", "the queue already has buffers (TPipe::Reset before a new InitBuffer)"),
    Rule("pad_block_len", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopyPad(a, xg, DataCopyExtParams(1, 4 * sizeof(float) + 2 * BAD, 0, 0, 0), DataCopyPadExtParams<float>());
    q.FreeTensor(a);
""", "DataCopyPad", "blockLen must be a whole number of elements (18 bytes, 4-byte elements)"),
    Rule("event_id_range", """
    SetFlag<HardEvent::V_S>(7 + BAD);
    WaitFlag<HardEvent::V_S>(7);
""", "SetFlag", "the event id must be in [0, 8) (got 8)"),
    Rule("tbuf_offset_alignment", """
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> t = b.GetWithOffset<float>(8, BAD ? 48 : 64);
""", "TBuf::GetWithOffset", "the offset must be a multiple of 32 bytes (offset 48)"),
    Rule("atomic_type", """
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopy(a, xg, 64);
    q.EnQue(a);
    a = q.DeQue<float>();
    if (BAD) SetAtomicAdd<half>(); else SetAtomicAdd<float>();
    DataCopy(yg, a, 64);
    SetAtomicNone();
    q.FreeTensor(a);
""", "DataCopy", "with SetAtomicAdd on, the copied type must be the SetAtomicAdd type"),
    Rule("pad_block_len_limit", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopyPad(a, xg, DataCopyExtParams(1, BAD ? 2097152 : 256, 0, 0, 0), DataCopyPadExtParams<float>());
    q.FreeTensor(a);
""", "DataCopyPad", "blockLen must be in [0, 2097151] bytes (got 2097152)"),
    *(Rule(f"reduce_sum_count_{bad}", f"""
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 512);
    LocalTensor<float> t = b.Get<float>();
    Duplicate(t, 1.0f, 64);
    ReduceSum(t[64], t, t[72], BAD ? {bad} : 64);
""", "ReduceSum", f"count must be in [1, UB bytes / sizeof(T)] = [1, 49152] (got {bad})") for bad in (0, 49153)),
    Rule("index_at_size", """
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> t = b.Get<float>();
    LocalTensor<float> last = t[BAD ? 64 : 63];
""", "LocalTensor::operator[]", "offset must be below the tensor size (offset 64, size 64 elements)"),
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


SOURCE = HEAD + "".join(f"    case {i}: {{{r.body}    }} break;\n" for i, r in enumerate(RULES)) + "    }\n}\n"


def launch(rule: Rule, bad: int):
    x = np.random.default_rng().standard_normal(N).astype(np.float32)
    y = np.zeros(N, np.float32)
    ws = np.zeros(48 * 8, np.int32)
    return run(SOURCE, "rule", [x, y, ws, params(RULES.index(rule), bad)], block_dim=rule.block_dim)


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_broken_rule_is_named(rule):
    with pytest.raises(TwinRuleError) as info:
        launch(rule, 1)
    message = str(info.value)
    if rule.core is not None:
        assert re.match(rf"core {rule.core}: {re.escape(rule.call)}: ", message), message
    assert rule.rule in message


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_fixed_kernel_runs(rule):
    stats = launch(rule, 0)
    assert stats.block_dim == rule.block_dim


def test_rules_are_distinct():
    assert len({(r.call, r.rule) for r in RULES}) == len(RULES) >= 10
