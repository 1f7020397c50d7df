# SPDX-License-Identifier: BSD-3-Clause
"""The performance model: what the twin's pipeline timeline says the kernel costs on an Atlas A2/A3
SoC, beside the roofline and a model of CANN's own RmsNormGrad (the anchor). Every figure is
modelled; see PERFORMANCE.md.

    from rmsnorm_backward.perf import load_model, run_case, suite
    rows = [run_case(case, load_model("Ascend910B2"), rng) for case in suite("llm")]
"""
from .bench import format_table, run_case, twin_speed
from ..twin import Model, load_model
from .model import anchor, measured, roofline_us
from .suites import SUITES, Case, suite

__all__ = ["Case", "Model", "SUITES", "anchor", "format_table", "load_model", "measured", "roofline_us",
           "run_case", "suite", "twin_speed"]
