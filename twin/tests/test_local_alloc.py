# SPDX-License-Identifier: BSD-3-Clause
"""Static tensors of the twin (twin/include/twin/local_alloc.h): LocalMemAllocator hands out UB
back to back and its tensors compute like any other; then the CPU-debug rules of static tensors."""
import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import run

# Doubles x through two static tensors and reports the allocator's addresses: out = 2x, then
# (address of the second tensor, address after both) in addr.
ALLOC = r"""
extern "C" __global__ __vector__ void alloc(GM_ADDR x, GM_ADDR out, GM_ADDR addr)
{
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<float> a = ub.Alloc<float, 200>();
    const uint32_t second = ub.GetCurAddr();
    LocalTensor<float> b = ub.Alloc<TPosition::VECOUT, float>(200);
    GlobalTensor<float> gx, go;
    GlobalTensor<uint32_t> ga;
    gx.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x), 200);
    go.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(out), 200);
    ga.SetGlobalBuffer(reinterpret_cast<__gm__ uint32_t *>(addr), 2);
    DataCopy(a, gx, 200);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Add(b, a, a, 200);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(go, b, 200);
    ga.SetValue(0, second);
    ga.SetValue(1, ub.GetCurAddr());
}
"""


def test_allocator_hands_out_ub_back_to_back(rng):
    x = rng.standard_normal(200).astype(np.float32)
    out = np.zeros(200, np.float32)
    addr = np.zeros(2, np.uint32)
    run(ALLOC, "alloc", [x, out, addr])
    np.testing.assert_array_equal(out, 2 * x)
    np.testing.assert_array_equal(addr, [800, 1600])


RULE = r"""
extern "C" __global__ __vector__ void static_rule(GM_ADDR out)
{
    (void)out;
    STATEMENT;
}
"""


@pytest.mark.parametrize("statement,rule", [
    ("LocalTensor<float> t(TPosition::VECCALC, 16, 8)", "addr must be 32-byte aligned"),
    ("LocalTensor<float> t(TPosition::VECCALC, 0, 5)", "tensor length must be a multiple of 32 bytes"),
    ("LocalTensor<float> t(TPosition::VECCALC, 0, 0)", "tileSize must be greater than 0"),
    ("LocalTensor<float> t(TPosition::VECCALC, 196608 - 32, 16)", "must lie inside the Unified Buffer"),
    ("LocalTensor<float> t(TPosition::GM, 0, 8)", "not GM or MAX"),
    ("LocalMemAllocator<Hardware::UB> a; LocalMemAllocator<Hardware::UB> b", "only one LocalMemAllocator"),
    ("LocalMemAllocator<Hardware::L1> a", r"LocalMemAllocator: an AI vector core has no L1 buffer"),
])
def test_static_tensor_rules(statement, rule):
    with pytest.raises(TwinRuleError, match=rule):
        run(RULE.replace("STATEMENT", statement), "static_rule", [np.zeros(8, np.float32)])


def test_allocator_may_be_made_again_after_the_first_is_gone():
    body = RULE.replace("STATEMENT", "{ LocalMemAllocator<Hardware::UB> a; } LocalMemAllocator<Hardware::UB> b")
    run(body, "static_rule", [np.zeros(8, np.float32)])
