# SPDX-License-Identifier: BSD-3-Clause
"""run_kernel's auto_sync: bisheng's --cce-auto-sync, where the compiler inserts the SetFlag/WaitFlag
pair between the scalar pipe and V / MTE2 / MTE3 (twin/include/twin/sync.h AutoSynced). Off, a scalar
read of data a copy just wrote is a rule error naming the event; on, it is ordered as the compiler
orders it, on the timeline too: the scalar unit waits for the copy as after an explicit pair."""
import numpy as np
import pytest

from ascendc_twin.errors import InvalidInputError, TwinRuleError
from small_kernels import params, run

N = 4096  # float32 elements copied in: long enough that waiting for the copy shows in the time

# params = [mode, index]. mode 0: GetValue(index) of the copied buffer with no flag; 1: the same after
# an explicit MTE2_S pair; 2: GetValue of a buffer only the scalar unit wrote (nothing to wait for).
# Then a GM scalar store of the value, which starts only once the scalar unit has it.
SOURCE = f"constexpr int32_t N = {N};\n" + """
extern "C" __global__ __vector__ void scalar_after_copy(GM_ADDR x, GM_ADDR y, GM_ADDR p)
{
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t *)p, 2);
    const int32_t mode = pg.GetValue(0), index = pg.GetValue(1);
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x, N);
    yg.SetGlobalBuffer((__gm__ float *)y, 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, N * sizeof(float));
    pipe.InitBuffer(b, 32);
    const LocalTensor<float> copied = a.Get<float>(), own = b.Get<float>();
    own.SetValue(0, 1.5f);
    DataCopy(copied, xg, N);
    if (mode == 1) {
        SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
    }
    const float value = mode == 2 ? own.GetValue(0) : copied.GetValue(index);
    yg.SetValue(0, value);
}
"""


def launch(rng, mode: int, auto_sync: bool):
    x = rng.standard_normal(N).astype(np.float32)
    y = np.full(8, -1.0, np.float32)
    index = int(rng.integers(N))
    stats = run(SOURCE, "scalar_after_copy", {"x": x, "y": y, "params": params(mode, index)}, auto_sync=auto_sync)
    return x[index] if mode != 2 else np.float32(1.5), y, stats.total["model_cycles"]


def test_without_auto_sync_the_missing_flag_is_a_rule_error_naming_the_event(rng):
    with pytest.raises(TwinRuleError, match=r"LocalTensor::GetValue: .*HardEvent::MTE2_S.*\(MTE2 wrote, S reads"):
        launch(rng, 0, auto_sync=False)


def test_with_auto_sync_the_scalar_read_gets_what_the_copy_wrote(rng):
    want, y, _ = launch(rng, 0, auto_sync=True)
    np.testing.assert_array_equal(y, [want] + [-1.0] * 7)


def test_the_inserted_pair_costs_what_an_explicit_pair_costs(rng):
    _, _, auto = launch(rng, 0, auto_sync=True)
    _, _, explicit = launch(rng, 1, auto_sync=False)
    _, _, unordered = launch(rng, 2, auto_sync=True)
    assert auto >= explicit
    assert auto > unordered  # the scalar unit did wait for the copy


def test_auto_sync_must_be_a_bool(rng):
    with pytest.raises(InvalidInputError, match="auto_sync must be True or False"):
        run(SOURCE, "scalar_after_copy", [np.zeros(N, np.float32), np.zeros(8, np.float32), params(2, 0)],
            auto_sync="on")
