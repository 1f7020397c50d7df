# SPDX-License-Identifier: BSD-3-Clause
"""Small Ascend C kernels written inline by the twin's tests, run through run_kernel."""
from __future__ import annotations

import hashlib
import os
import tempfile

import ml_dtypes
import numpy as np

from ascendc_twin import run_kernel
from ascendc_twin.build import cache_dir

PRELUDE = '#include "kernel_operator.h"\nusing namespace AscendC;\n'

# NumPy dtype -> the Ascend C type a kernel instantiates for it.
CTYPES = {
    np.dtype(np.float16): "half",
    np.dtype(ml_dtypes.bfloat16): "bfloat16_t",
    np.dtype(np.float32): "float",
    np.dtype(np.int8): "int8_t",
    np.dtype(np.int16): "int16_t",
    np.dtype(np.int32): "int32_t",
}


def run(body: str, name: str, args, **kw):
    """Writes PRELUDE + body to a file named by its content and launches its entry `name`.

    Kept in one directory of the cache, so a kernel text is written once for every test that runs it.
    Compiled at -O0 unless the test says otherwise: these kernels are small and run once or twice.
    """
    text = PRELUDE + body
    directory = cache_dir() / "test_kernels"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}_{hashlib.sha256(text.encode()).hexdigest()[:16]}.cpp"
    if not path.is_file():  # written whole, then renamed: parallel workers never read half a kernel
        fd, partial = tempfile.mkstemp(dir=directory, suffix=".part")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(partial, path)
    kw.setdefault("optimize", False)
    return run_kernel(path, name, args, **kw)


def random_array(rng: np.random.Generator, n: int, dtype, scale: float = 1.0) -> np.ndarray:
    """Fresh random values of `dtype`: normals times `scale` for floats, the full range for integers."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=n, endpoint=True).astype(dtype)
    return (rng.standard_normal(n) * scale).astype(np.float32).astype(dtype)


def params(*values: int) -> np.ndarray:
    """Kernel parameters passed as an int32 GM buffer (read with GlobalTensor::GetValue)."""
    return np.array(values, dtype=np.int32)


# CTYPES and the unsigned types, for the element-wise harness below.
ELEMENT_TYPES = {**CTYPES, np.dtype(np.uint8): "uint8_t", np.dtype(np.uint16): "uint16_t",
                 np.dtype(np.uint32): "uint32_t"}

# A kernel `ew` over GM buffers a, b (N elements of T), mask (M bytes; M = 0: no mask, the buffer
# may be null), pick (one int32: which of the calls runs) and out (N elements of D): copies a, b and
# the mask into UB tensors x, y and m, runs CALL (a call that writes d, an N-element tensor of D, or
# a switch over `variant` among several), copies d out. The mask's buffer comes last in UB so x, y
# and d sit where they would without it.
ELEMENTWISE = r"""
extern "C" __global__ __vector__ void ew(GM_ADDR a, GM_ADDR b, GM_ADDR mask, GM_ADDR pick, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bo, bm;
    pipe.InitBuffer(ba, N * sizeof(T));
    pipe.InitBuffer(bb, N * sizeof(T));
    pipe.InitBuffer(bo, N * sizeof(D));
    pipe.InitBuffer(bm, M > 0 ? M : 32);
    LocalTensor<T> x = ba.Get<T>(), y = bb.Get<T>();
    LocalTensor<D> d = bo.Get<D>();
    LocalTensor<uint8_t> m = bm.Get<uint8_t>();
    GlobalTensor<T> ga, gb;
    GlobalTensor<D> go;
    ga.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(a), N);
    gb.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(b), N);
    go.SetGlobalBuffer(reinterpret_cast<__gm__ D *>(out), N);
    GlobalTensor<int32_t> gp;
    gp.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(pick), 1);
    const int32_t variant = gp.GetValue(0);
    DataCopy(x, ga, N);
    DataCopy(y, gb, N);
    DataCopy(d, go, N);
    if constexpr (M > 0) {
        GlobalTensor<uint8_t> gm;
        gm.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(mask), M);
        DataCopy(m, gm, M);
    }
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
    CALL;
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(go, d, N);
}
"""


# The declarations run_elementwise puts ahead of ELEMENTWISE, with sample values, for tests/conformance
# (a mask, so the real-header compile sees that branch too).
KERNEL_TEXT_HEADS = {"ELEMENTWISE": "using T = float;\nusing D = float;\nconstexpr uint32_t N = 64;\n"
                                    "constexpr uint32_t M = 256;\n"}


def run_elementwise(call, a: np.ndarray, b: np.ndarray, out: np.ndarray, mask: np.ndarray | None = None,
                    pick: int = 0):
    """Runs ELEMENTWISE with `call`; a and b share a dtype (T), out's dtype is D; out holds d's
    starting values and comes back with the result; `mask` (uint8, a multiple of 32 bytes) lands in m.
    N (len(a)) x the sizes must be 32-byte multiples. `call` may be a tuple of calls: they compile into
    one kernel (a switch), of which `pick` runs, so tests parametrized over the calls compile once."""
    calls = (call,) if isinstance(call, str) else tuple(call)
    if not 0 <= pick < len(calls):
        raise ValueError(f"pick must index the {len(calls)} calls (got {pick})")
    body = calls[0] if len(calls) == 1 else (
        "switch (variant) {" + "".join(f" case {i}: {c}; break;" for i, c in enumerate(calls)) + " }")
    m = 0 if mask is None else len(mask)
    text = (f"using T = {ELEMENT_TYPES[a.dtype]};\nusing D = {ELEMENT_TYPES[out.dtype]};\n"
            f"constexpr uint32_t N = {len(a)};\nconstexpr uint32_t M = {m};\n" + ELEMENTWISE.replace("CALL", body))
    run(text, "ew", [a, b, mask, params(pick), out])
    return out
