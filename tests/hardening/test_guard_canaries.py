# SPDX-License-Identifier: BSD-3-Clause
"""Nothing lost or corrupted: the launcher's guard canaries really catch a raw write just outside a GM
buffer (before its start or past its end, near and far), and conftest's check after every launch of
the operator really catches a kernel that writes into one of its inputs. Both checks run after every
twin launch of the test suite; these tests show they can fail."""
import numpy as np
import pytest
from launch_checks import InputChanged

from ascendc_twin.errors import TwinRuleError

# Flips the byte at a byte offset (int64 in `where`) from the start of `buf`, bypassing the twin's
# GlobalTensor and DataCopy bounds checks the way a stray raw pointer would.
SCRIBBLE = """
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void scribble(GM_ADDR buf, GM_ADDR where)
{
    const int64_t offset = *reinterpret_cast<__gm__ int64_t *>(where);
    buf[offset] = uint8_t(buf[offset] ^ 0xA5);
}
"""

# Writes x + 1 into dx, and with WRITE_INPUT also adds 1 to x's first element in place.
TOUCH = """
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void touch(GM_ADDR x, GM_ADDR dx)
{
    auto *in = reinterpret_cast<__gm__ float *>(x);
    auto *out = reinterpret_cast<__gm__ float *>(dx);
    for (int i = 0; i < 8; ++i) {
        out[i] = in[i] + 1.0f;
    }
#ifdef WRITE_INPUT
    in[0] += 1.0f;
#endif
}
"""

SIZE = 96  # bytes of the scribbled buffer: not a multiple of 32 or of the guard size


def scribble(run_source, offset: int, rng):
    buf = rng.integers(0, 256, SIZE, dtype=np.uint8)
    original = buf.copy()
    run_source(SCRIBBLE, "scribble", {"buf": buf, "where": np.array([offset], dtype=np.int64)})
    return original, buf


@pytest.mark.parametrize("offset,side", [(-1, "before its start"), (-700, "before its start"),
                                         (SIZE, "past its end"), (SIZE + 1000, "past its end")])
def test_a_write_outside_a_buffer_breaks_its_canary(run_source, rng, offset, side):
    with pytest.raises(TwinRuleError, match=rf"GM buffer 'buf': a write reaching \d+ bytes {side}.*guard canary"):
        scribble(run_source, offset, rng)


@pytest.mark.parametrize("offset", [0, SIZE - 1])
def test_a_write_inside_a_buffer_keeps_the_canaries(run_source, rng, offset):
    original, buf = scribble(run_source, offset, rng)
    assert buf[offset] == original[offset] ^ 0xA5
    assert np.array_equal(np.delete(buf, offset), np.delete(original, offset))


def test_a_launch_that_changes_an_operator_input_fails(run_source, rng):
    x = rng.standard_normal(8).astype(np.float32)
    dx = np.zeros(8, np.float32)
    run_source(TOUCH, "touch", {"x": x, "dx": dx})
    assert np.array_equal(dx, x + 1)
    with pytest.raises(InputChanged, match="changed its input x"):
        run_source(TOUCH, "touch", {"x": x, "dx": dx}, defines={"WRITE_INPUT": None})
