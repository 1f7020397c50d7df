# SPDX-License-Identifier: BSD-3-Clause
"""CANN's own RmsNormGrad tiling (ops-nn's op_host source, built from the fetched checkout by
perf.cann.host) runs for any shape on the project's SoC table, and plans what its A2 branch says:
rows split evenly over the vector cores, whole rows in UB up to 6080 columns (the small-D formula up
to 640 aligned columns), 4096-column chunks above, the deterministic flag from the context."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rmsnorm_backward.errors import InvalidInputError
from rmsnorm_backward.perf import cann

pytestmark = pytest.mark.skipif(cann.missing() is not None, reason=cann.missing() or "")

SYS_WORKSPACE = 16 << 20  # the tiling's system workspace on A2/A3


def plan_for(rows, cols, dtype, *, deterministic=False, soc="Ascend910B2"):
    a = np.empty((0,), dtype=dtype)  # only shapes and dtypes reach the tiling
    shape = (rows, cols)
    inputs = [(shape, a.dtype.name), (shape, a.dtype.name), ((rows,), "float32"), ((cols,), a.dtype.name)]
    outputs = [(shape, a.dtype.name), ((cols,), "float32")]
    return cann.host.tiling(inputs, outputs, deterministic=deterministic, soc=soc)


DTYPES = ("float32", "float16", "bfloat16")
COLS = (1, 7, 16, 100, 640, 641, 1000, 4096, 6080, 6081, 8192, 12345, 65536)
ROWS = (1, 47, 48, 777, 1 << 20)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cols", COLS)
def test_tiling_runs_for_any_shape_and_splits_rows_over_the_cores(dtype, cols):
    import ml_dtypes  # noqa: F401  (bfloat16 for numpy)

    align = 8 if dtype == "float32" else 16
    col_align = -(-cols // align) * align
    for rows in ROWS:
        plan = plan_for(rows, cols, ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
        fields = cann.fields(plan)
        block_factor = -(-rows // 48)
        assert plan.block_dim == fields["block_dim"] == -(-rows // block_factor)
        assert (fields["row"], fields["col"], fields["block_factor"]) == (rows, cols, block_factor)
        assert fields["avg_factor"] == np.float32(1.0 / cols)
        assert fields["data_type"] == DTYPES.index(dtype)
        if cols <= 6080:
            buffer = 6080 if col_align > 640 else \
                (195584 - 10 * col_align) // (24 * col_align + 268) * col_align
            assert (plan.tiling_key, cann.path_of(plan)) == (1, "split_n")
            assert fields["ub_factor"] == min(buffer // col_align, block_factor)
        else:
            assert (plan.tiling_key, cann.path_of(plan)) == (2, "split_d")
            assert fields["ub_factor"] == 4096 and fields["ub_calc_loop"] == math.ceil(cols / 4096)
        assert plan.workspace_bytes == SYS_WORKSPACE + 8 * plan.block_dim * 4


def test_deterministic_mode_asks_for_a_workspace_row_per_core():
    atomic = plan_for(96, 100, "float32")
    det = plan_for(96, 100, "float32", deterministic=True)
    assert (cann.fields(atomic)["fixed_output"], cann.fields(det)["fixed_output"]) == (0, 1)
    assert det.workspace_bytes - atomic.workspace_bytes == 104 * 48 * 4


@pytest.mark.parametrize("soc, cores", [("Ascend910B2", 48), ("Ascend910B3", 40), ("Ascend910_93", 48)])
def test_the_platform_comes_from_the_project_s_soc_table(soc, cores):
    from ascendc_twin import soc_info

    assert soc_info(soc)["vector_cores"] == cores
    assert plan_for(4096, 1024, "float16", soc=soc).block_dim == cores


def test_the_registered_tiling_struct_is_what_the_kernel_reads():
    name, layout = cann.host.tiling_fields()
    assert name == "RmsNormGradTilingData"
    assert [f for f, _, n in layout if not n][:3] == ["row", "col", "avg_factor"]
    assert len(plan_for(8, 64, "float32").data) == sum((1 if t == "uint8_t" else 4) * max(n, 1) for _, t, n in layout)


@pytest.mark.parametrize("change, message", [
    (dict(rows=0), "RmsNormGrad's tiling failed: Parameter dy of RmsNormGrad has incorrect shape size 0. "
                   "Reason: Parameter dy does not support empty tensor."),
    (dict(soc="Ascend310P3"), "soc Ascend310P3 is not in the project's SoC table"),
])
def test_what_the_tiling_refuses_is_one_sentence(change, message):
    args = {"rows": 8, "soc": "Ascend910B2", **change}
    with pytest.raises(InvalidInputError) as info:
        plan_for(args["rows"], 64, "float16", soc=args["soc"])
    assert str(info.value) == message
