# SPDX-License-Identifier: BSD-3-Clause
"""The harness of the test_rules_* modules: each row is a small kernel that breaks one Ascend C rule
when run with BAD=1 and keeps it with BAD=0. The broken one must fail with an error naming the core,
the call and the rule (a rule the launch harness checks afterwards, core None, names the GM buffer
instead); the fixed one must run. A module's rows are the cases of one kernel (one compile), whose
text the module keeps at module level (SOURCE), where tests/conformance finds kernel texts."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pytest

from ascendc_twin.errors import TwinRuleError
from small_kernels import params, run

N = 8192  # float32 elements of x and y

# The kernel without rows: params = [row index, BAD], x (random float32), y (zeros) and ws (int32
# zeros, 32 bytes per core); kernel_source puts each row in as a case of its switch.
KERNEL = """
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
    }
}
"""
_CASES_AT = KERNEL.rindex("    }\n}\n")


@dataclass
class Rule:
    name: str
    body: str
    call: str
    rule: str
    core: Optional[str] = "0"  # None: a rule the harness checks after the launch, on no core
    block_dim: int = 1


def kernel_source(rules: list[Rule]) -> str:
    """The kernel whose `row` parameter picks one of `rules`."""
    assert len({(r.call, r.rule) for r in rules}) == len(rules), "each row breaks a rule of its own"
    cases = "".join(f"    case {i}: {{{r.body}    }} break;\n" for i, r in enumerate(rules))
    return KERNEL[:_CASES_AT] + cases + KERNEL[_CASES_AT:]


def launch(source: str, rules: list[Rule], rule: Rule, bad: int):
    x = np.random.default_rng().standard_normal(N).astype(np.float32)
    y = np.zeros(N, np.float32)
    ws = np.zeros(48 * 8, np.int32)
    return run(source, "rule", [x, y, ws, params(rules.index(rule), bad)], block_dim=rule.block_dim)


def rule_tests(rules: list[Rule], source: str):
    """The two tests of a module's rows on its kernel `source` (kernel_source(rules)): each row broken
    fails naming its rule, each row fixed runs. A module binds them to its own names (test_...) for
    pytest to collect."""
    rows = pytest.mark.parametrize("rule", rules, ids=[r.name for r in rules])

    @rows
    def broken_rule_is_named(rule: Rule) -> None:
        with pytest.raises(TwinRuleError) as info:
            launch(source, rules, rule, 1)
        message = str(info.value)
        if rule.core is not None:
            assert re.match(rf"core {rule.core}: {re.escape(rule.call)}: ", message), message
        assert rule.rule in message

    @rows
    def fixed_kernel_runs(rule: Rule) -> None:
        stats = launch(source, rules, rule, 0)
        assert stats.block_dim == rule.block_dim

    return broken_rule_is_named, fixed_kernel_runs
