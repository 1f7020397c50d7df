# SPDX-License-Identifier: BSD-3-Clause
"""CANN's forward norms, ops-nn's RmsNorm and AddRmsNorm A2 kernels (unchanged, read from OPS_NN_SRC)
with ops-nn's own host tiling for each shape (perf.cann.forward), on the twin with random inputs,
against the float64 golden (golden.forward) under the precision standard (precision.compare: y and
AddRmsNorm's x = x1 + x2 against the golden rounded to their dtype, rstd as float32).

CASES cover every A2 path the tiling picks (its key named beside the case) in fp16, bf16 and fp32
(MIXED_CASES: RmsNorm's float32 gamma beside a 16-bit x):
a few rows, many rows over all cores, column counts that are not a multiple of the 32-byte block,
and rows long enough to be split. CANN_DEFECTS lists where CANN's kernel itself breaks a documented
rule, which the twin refuses (the case asserts the refusal); KNOWN_MISSES where CANN's kernel rounds
by design in a way the standard does not allow (the case asserts the kernel's own arithmetic, emulated
in NumPy, bit for bit, so the miss is CANN's rounding and nothing of the twin's). Needs OPS_NN_SRC,
ASC_DEVKIT_SRC, METADEF_SRC, GE_SRC and OPBASE_SRC (`source /work/src/env.sh`); skipped otherwise."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from rmsnorm_backward import golden, precision
from rmsnorm_backward.errors import InvalidInputError, KernelRuleError
from rmsnorm_backward.op_def import dtype_of
from rmsnorm_backward.perf.cann import fields, forward, host, sources

REASON = sources.missing(op_type="RmsNorm") or sources.missing(op_type="AddRmsNorm")
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

EPSILON = 1e-6
DTYPES = ("fp16", "bf16", "fp32")
# (op, shape, the A2 tiling key's mode, per dtype where they differ): rms_norm_tiling.cpp's modes
# (0 normal, 1 split-D, 2 merge-N), add_rms_norm_tiling.cpp's (0 normal, 1 split-D, 2 merge-N,
# 3 single-N, 4 multi-N; its key is dtype x 10 + mode).
CASES = [
    ("rms_norm", (4, 1024), 2), ("rms_norm", (500, 100), 2), ("rms_norm", (2, 8, 100), 2), ("rms_norm", (500, 1000), 2),
    ("rms_norm", (48, 4000), 0), ("rms_norm", (97, 2050), 0), ("rms_norm", (8, 20000), 1), ("rms_norm", (3, 13007), 1),
    ("add_rms_norm", (4, 1024), 3), ("add_rms_norm", (48, 777), 3), ("add_rms_norm", (4096, 1000), 2),
    ("add_rms_norm", (1000, 100), 2), ("add_rms_norm", (96, 4000), {"fp16": 4, "bf16": 0, "fp32": 0}),
    ("add_rms_norm", (97, 2050), 0), ("add_rms_norm", (8, 20000), 1), ("add_rms_norm", (3, 13007), 1),
]
# RmsNorm with a float32 gamma beside a 16-bit x (rms_norm_def.cpp registers the pair), whose tiling
# (rms_norm_tiling.cpp's CalMixDtypeTiling) picks merge-N, normal, single-row (3) or split-D by UB need.
MIXED_DTYPES = ("fp16/fp32", "bf16/fp32")
MIXED_CASES = [((4, 1024), 2), ((48, 4000), 0), ((97, 2050), 0), ((8, 13000), 3), ((3, 30007), 1)]
# In-place BroadCast: rms_norm_merge_n.h's BroadCastGamma broadcasts gamma along the rows with src and
# dst the same tensor (every merge-N launch but the is_performance one: fp16/bf16 x and gamma, 2-D or
# 3-D x with at most 512 rows in its first dim); Broadcast's API page: source and destination may not overlap.
# CANN's BroadCast writes the rows with Or from the first row, which the twin refuses as a partial
# overlap within a repeat (the general address-overlap rule of the API's constraints page).
IN_PLACE_BROADCAST = "Or: the dst and src0 operands overlap partially"
# Brcb over-read: rms_norm_merge_n.h's doPerformanceRstd (the is_performance merge-N) calls Brcb with
# repeatTime = the rows, but each repeat reads 8 source elements (Brcb's API page: src holds at least
# 8 x repeatTime), so it reads 8 x rows values from the rstd buffer of row_factor floats.
BRCB_OVER_READ = "Brcb: the src operand must hold 8 x repeatTime elements"
# multi-N Gather: add_rms_norm_multi_n.h gathers with src and dst the same tensor (rstdLocal);
# Gather's API page: src and dst may not use the same memory.
GATHER_IN_PLACE = "Gather: src and dst may not be the same memory"
# (op, shape, dtype) -> the twin's refusal of the documented rule CANN's kernel breaks there.
CANN_DEFECTS: dict[tuple, str] = {
    **{("rms_norm", shape, "fp32"): IN_PLACE_BROADCAST for shape in ((4, 1024), (500, 100), (2, 8, 100), (500, 1000))},
    **{("rms_norm", (4, 1024), dtype): IN_PLACE_BROADCAST for dtype in MIXED_DTYPES},
    ("rms_norm", (500, 1000), "fp16"): BRCB_OVER_READ, ("rms_norm", (500, 1000), "bf16"): BRCB_OVER_READ,
    ("add_rms_norm", (96, 4000), "fp16"): GATHER_IN_PLACE,
}
# (op, dtype) -> why CANN's kernel misses the standard there by design. There the case checks y bit for
# bit against the kernel's arithmetic in NumPy instead, and rstd against the golden of the x it
# normalises (UNROUNDED_SUM_MODES: the float32 sum x1 + x2, before rounding).
KNOWN_MISSES = {
    ("add_rms_norm", "bf16"): "AddRmsNorm's bf16 paths round x * rstd to bf16 before the gamma multiply "
                              "(add_rms_norm*.h: Cast CAST_RINT, Cast back, Mul by gamma, Cast CAST_RINT), as "
                              "Llama's RMSNorm does (weight * hidden.to(dtype)); the two roundings put y up to 2 "
                              "ulp off the golden, where bf16's 4e-3 standard allows half of one",
}
UNROUNDED_SUM_MODES = {0}  # add_rms_norm.h (normal): rstd and y from the float32 sum, x1 + x2 unrounded


def _inputs(rng, op, shape, dtype):
    """Random inputs; dtype "x/gamma" names a gamma dtype other than x's."""
    x_dtype, _, gamma_dtype = dtype.partition("/")
    count = 2 if op == "add_rms_norm" else 1
    xs = [rng.standard_normal(shape, dtype=np.float32).astype(dtype_of(x_dtype).numpy()) for _ in range(count)]
    gamma = rng.standard_normal(shape[-1], dtype=np.float32).astype(dtype_of(gamma_dtype or x_dtype).numpy())
    return xs, gamma


def _run(op, xs, gamma):
    """CANN's kernel on the twin: {output name: array} and the tiling key."""
    if op == "rms_norm":
        y, rstd, stats = forward.rms_norm(*xs, gamma, epsilon=EPSILON)
        return {"y": y, "rstd": rstd}, stats["tiling_key"]
    y, rstd, x, stats = forward.add_rms_norm(*xs, gamma, epsilon=EPSILON)
    return {"y": y, "rstd": rstd, "x": x}, stats["tiling_key"]


def _golden(op, xs, gamma):
    """{output name: float64 golden}: AddRmsNorm's x is x1 + x2 rounded to the dtype, normalised as such."""
    x = xs[0]
    out = {}
    if op == "add_rms_norm":
        x = (xs[0].astype(np.float64) + xs[1].astype(np.float64)).astype(xs[0].dtype)
        out["x"] = x.astype(np.float64)
    out["y"], out["rstd"] = golden.forward(x, gamma, EPSILON)
    return out


def _emulated_y(xs, gamma, rstd, mode):
    """y as CANN's bf16 AddRmsNorm computes it from its own rstd: float32 x (the rounded sum, or the
    unrounded one in UNROUNDED_SUM_MODES) times rstd, rounded to bf16, times gamma in float32, rounded."""
    bf16 = xs[0].dtype
    x = xs[0].astype(np.float32) + xs[1].astype(np.float32)
    if mode not in UNROUNDED_SUM_MODES:
        x = x.astype(bf16).astype(np.float32)
    normalised = (x * rstd.astype(np.float32)).astype(bf16).astype(np.float32)
    return (normalised * gamma.astype(np.float32)).astype(bf16)


def _param(op, shape, dtype, mode):
    return pytest.param(op, shape, dtype, mode[dtype] if isinstance(mode, dict) else mode,
                        id=f"{op}-{'x'.join(map(str, shape))}-{dtype.replace('/', '-gamma-')}")


PARAMS = [_param(op, shape, dtype, mode) for op, shape, mode in CASES for dtype in DTYPES] + \
         [_param("rms_norm", shape, dtype, mode) for shape, mode in MIXED_CASES for dtype in MIXED_DTYPES]


@pytest.mark.parametrize("op,shape,dtype,mode", PARAMS)
def test_cann_forward_kernel_matches_the_golden(op, shape, dtype, mode):
    rng = np.random.default_rng(zlib.crc32(f"{op}{shape}{dtype}".encode()))
    xs, gamma = _inputs(rng, op, shape, dtype)
    if (op, shape, dtype) in CANN_DEFECTS:
        with pytest.raises(KernelRuleError, match=CANN_DEFECTS[(op, shape, dtype)]):
            _run(op, xs, gamma)
        return
    outputs, key = _run(op, xs, gamma)
    assert key % 10 == mode
    expected = _golden(op, xs, gamma)
    if (op, dtype) in KNOWN_MISSES:
        np.testing.assert_array_equal(outputs["y"].view(np.uint16),
                                      _emulated_y(xs, gamma, outputs["rstd"], mode).view(np.uint16))
        if mode in UNROUNDED_SUM_MODES:
            expected["rstd"] = golden.forward(xs[0].astype(np.float64) + xs[1].astype(np.float64), gamma, EPSILON)[1]
        del expected["y"]
    reports = {name: precision.compare(outputs[name], expected[name], "fp32" if name == "rstd" else dtype.split("/")[0])
               for name in expected}
    missed = sorted(name for name, report in reports.items() if not report.passed)
    assert missed == [], "; ".join(f"{name}: {reports[name]}" for name in missed)


@pytest.mark.parametrize("op_type", ["RmsNorm", "AddRmsNorm"])
def test_host_tiling_reads_epsilon_from_the_attributes_and_the_cores_from_tiling_parse(op_type):
    rows, cols = 4096, 1000
    x = ((rows, cols), "float16")
    inputs = [x, ((cols,), "float16")] if op_type == "RmsNorm" else [x, x, ((cols,), "float16")]
    outputs = [x, ((rows, 1), "float32")] + ([x] if op_type == "AddRmsNorm" else [])
    plan = host.tiling(inputs, outputs, op_type=op_type, attrs=(1e-5,))
    values = fields(plan, op_type)
    assert (values["epsilon"], values["avg_factor"]) == (np.float32(1e-5), np.float32(1 / cols))
    assert plan.block_dim == 48  # Ascend910B2's vector cores, which the op's TilingParse reads
    with pytest.raises(InvalidInputError, match="(?i)epsilon"):
        host.tiling(inputs, outputs, op_type=op_type, attrs=(-1.0,))


@pytest.mark.parametrize("call,message", [
    (lambda x, g: forward.add_rms_norm(x, x, g.astype(np.float32)), "gamma must have their dtype"),
    (lambda x, g: forward.rms_norm(x, g[:3]), "last dims"),
    (lambda x, g: forward.rms_norm(x.astype(np.int32), g), "must be one of"),
    (lambda x, g: forward.rms_norm(x, g, epsilon=-1.0), "epsilon"),
])
def test_forward_refuses_inputs_the_kernels_do_not_take(call, message):
    x, gamma = np.ones((2, 8), np.float16), np.ones(8, np.float16)
    with pytest.raises(InvalidInputError, match=message):
        call(x, gamma)
