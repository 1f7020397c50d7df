# SPDX-License-Identifier: BSD-3-Clause
"""The rules of the instructions' arguments: DataCopy's length, UB alignment and GM bounds, DataCopyPad's
block and padding limits, the atomic type, ReduceSum's count, and GM outputs left undefined after
the launch; each broken by one row of a kernel and kept by the same row fixed (rule_kernels.py).
(The vector instructions' own rules are in their test modules.)"""
from rule_kernels import Rule, kernel_source, rule_tests

RULES = [
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
    Rule("pad_block_len", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopyPad(a, xg, DataCopyExtParams(1, 4 * sizeof(float) + 2 * BAD, 0, 0, 0), DataCopyPadExtParams<float>());
    q.FreeTensor(a);
""", "DataCopyPad", "blockLen must be a whole number of elements (18 bytes, 4-byte elements)"),
    Rule("pad_block_len_limit", """
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> a = q.AllocTensor<float>();
    DataCopyPad(a, xg, DataCopyExtParams(1, BAD ? 2097152 : 256, 0, 0, 0), DataCopyPadExtParams<float>());
    q.FreeTensor(a);
""", "DataCopyPad", "blockLen must be in [0, 2097151] bytes (got 2097152)"),
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
    *(Rule(f"reduce_sum_count_{bad}", f"""
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 512);
    LocalTensor<float> t = b.Get<float>();
    Duplicate(t, 1.0f, 64);
    ReduceSum(t[64], t, t[72], BAD ? {bad} : 64);
""", "ReduceSum", f"count must be in [1, UB bytes / sizeof(T)] = [1, 49152] (got {bad})") for bad in (0, 49153)),
]
SOURCE = kernel_source(RULES)
test_broken_rule_is_named, test_fixed_kernel_runs = rule_tests(RULES, SOURCE)
