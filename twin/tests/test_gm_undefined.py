# SPDX-License-Identifier: BSD-3-Clause
"""GM bytes copied from UB that nothing wrote: the copy succeeds and carries the UB's poison (the NPU
copies whatever the UB held), the bytes are recorded undefined, and run_kernel refuses an output left
holding them unless allow_undefined=True. A later plain write defines them again; an atomic add onto
them does not."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError

COLS = 16  # one 64-byte copy of floats, of which the kernel's Duplicate writes the first `written`

SOURCE = """#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void partial(GM_ADDR y, GM_ADDR params)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)params, 2);
    const int32_t written = pg.GetValue(0), then = pg.GetValue(1);
    GlobalTensor<float> yg;
    yg.SetGlobalBuffer((__gm__ float *)y, COLS);
    TPipe pipe;
    TBuf<TPosition::VECCALC> partBuf, fullBuf;
    pipe.InitBuffer(partBuf, COLS * sizeof(float));
    pipe.InitBuffer(fullBuf, COLS * sizeof(float));
    LocalTensor<float> part = partBuf.Get<float>(), full = fullBuf.Get<float>();
    Duplicate(part, 1.5f, written);
    Duplicate(full, 0.25f, COLS);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(yg, part, COLS);
    PipeBarrier<PIPE_ALL>();
    if (then == 1) {  // a scalar store over every element
        for (int32_t i = 0; i < COLS; ++i) {
            yg.SetValue(i, 2.0f);
        }
    } else if (then == 2) {  // a second copy, of fully written UB
        DataCopy(yg, full, COLS);
    } else if (then == 3) {  // an atomic add of fully written UB
        SetAtomicAdd<float>();
        DataCopy(yg, full, COLS);
        SetAtomicNone();
    }
    PipeBarrier<PIPE_ALL>();
}
"""


def launch(run_source, written, then, **options):
    y = np.full(COLS, -7.0, np.float32)
    run_source(SOURCE, "partial", {"y": y, "params": np.array([written, then], np.int32)},
               defines={"COLS": COLS}, **options)
    return y


@pytest.mark.parametrize("written", [1, 8, 15])
def test_copy_of_unwritten_ub_carries_the_poison(run_source, written):
    y = launch(run_source, written, 0, allow_undefined=True)
    np.testing.assert_array_equal(y[:written], np.float32(1.5))
    assert (y[written:].view(np.uint32) == 0xFFFFFFFF).all()


@pytest.mark.parametrize("written", [1, 8, 15])
def test_an_output_left_undefined_is_refused_naming_its_first_element(run_source, written):
    with pytest.raises(TwinRuleError, match=rf"GM buffer y holds undefined data after the launch: element {written} "
                                            rf"\(byte offset {4 * written}\)"):
        launch(run_source, written, 0)


def test_a_fully_written_copy_is_no_error(run_source):
    np.testing.assert_array_equal(launch(run_source, COLS, 0), np.float32(1.5))


@pytest.mark.parametrize("then, value", [(1, 2.0), (2, 0.25)])
def test_a_plain_write_defines_the_bytes_again(run_source, then, value):
    np.testing.assert_array_equal(launch(run_source, 3, then), np.float32(value))


def test_an_atomic_add_onto_undefined_bytes_leaves_them_undefined(run_source):
    with pytest.raises(TwinRuleError, match=r"GM buffer y holds undefined data after the launch: element 3 "):
        launch(run_source, 3, 3)
    y = launch(run_source, 3, 3, allow_undefined=True)
    np.testing.assert_array_equal(y[:3], np.float32(1.75))
