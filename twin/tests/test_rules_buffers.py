# SPDX-License-Identifier: BSD-3-Clause
"""The rules of the buffers (TPipe, TQue, TBuf) and of LocalTensor indexing: UB capacity, the buffer
count, queue discipline, buffers freed by kernel exit, TBuf's bounds and offsets; each broken
by one row of a kernel and kept by the same row fixed (rule_kernels.py)."""
from rule_kernels import Rule, kernel_source, rule_tests

RULES = [
    Rule("ub_capacity", """
    TQue<QuePosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> scratch;
    pipe.InitBuffer(q, 2, 64 * 1024);
    pipe.InitBuffer(scratch, 196608 - 2 * 64 * 1024 + BAD);  // one byte more rounds up to 32
""", "TPipe::InitBuffer", "all buffers must fit the Unified Buffer (buffers total 196640 bytes > limit 196608 "
     "bytes"),
    Rule("buffer_count", """
    TQue<QuePosition::VECIN, 1> a;
    TQue<QuePosition::VECOUT, 1> b;
    pipe.InitBuffer(a, 40, 32);
    pipe.InitBuffer(b, 24 + BAD, 32);
""", "TPipe::InitBuffer", "at most 64 buffers per kernel"),
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
    q.FreeTensor(a);
    if (BAD) { LocalTensor<float> b = q.AllocTensor<float>(); q.FreeTensor(b); }
    DataCopy(yg, a, 64);
""", "DataCopy", "the LocalTensor is used after FreeTensor returned its buffer and a later AllocTensor"),
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
    Rule("tbuf_offset_alignment", """
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> t = b.GetWithOffset<float>(8, BAD ? 48 : 64);
""", "TBuf::GetWithOffset", "the offset must be a multiple of 32 bytes (offset 48)"),
    Rule("index_at_size", """
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> t = b.Get<float>();
    LocalTensor<float> last = t[BAD ? 64 : 63];
""", "LocalTensor::operator[]", "offset must be below the tensor size (offset 64, size 64 elements)"),
]
SOURCE = kernel_source(RULES)
test_broken_rule_is_named, test_fixed_kernel_runs = rule_tests(RULES, SOURCE)
