# SPDX-License-Identifier: BSD-3-Clause
"""The one conftest of the operator's tests: the twin's fixtures (a reproducible random generator per
test, run_source, read_only_dir; ascendc_twin.testing) and, for the whole session, the check that
every launch of the operator's kernel leaves its inputs unchanged (launch_checks.py); the
performance model of the reference SoC; the CPU extensions built once per run (cpu_build); the
longest test files scheduled first.

Every run draws a fresh seed (shown in pytest's header); TWIN_TEST_SEED=<seed> repeats a run.
"""
from __future__ import annotations

import os
from pathlib import Path

import ascendc_twin
import pytest
from ascendc_twin.testing import pytest_report_header, read_only_dir, rng, run_source  # noqa: F401

from cpu_build import build_once
from launch_checks import inputs_unchanged


@pytest.fixture(scope="session", autouse=True)
def operator_inputs_unchanged():
    """Registers inputs_unchanged as a launch check of the twin for the session (simulate, the torch op
    and the in-process CLI launch through run_kernel). Session scope, so hypothesis tests see no
    function-scoped fixture."""
    remove = ascendc_twin.add_launch_check(inputs_unchanged)
    yield
    remove()


@pytest.fixture(scope="session")
def model():
    """The performance model of the reference SoC, Ascend910B2 (ascendc_twin.model)."""
    from ascendc_twin import load_model

    return load_model("Ascend910B2")


@pytest.fixture(scope="session")
def cpu_build(tmp_path_factory) -> Path:
    """The cpu preset's build directory, built once per run (cpu_build.py)."""
    from rmsnorm_backward import resources

    if resources.checkout() is None:
        pytest.skip("builds from a source checkout")
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's, across workers
    return build_once(resources.checkout(), shared / "cpu-build")


# The test files that take longest (tens of seconds each, most of it on one worker, since a file
# runs whole on one): handed out first, so no worker is left with one of them at the end while the
# others idle. Only the order changes.
LONGEST_FIRST = ("tests/perf/test_goals.py", "tests/docs/test_snippets.py", "tests/hardening/test_randomized.py",
                 "tests/kernel/test_long_rows_pipeline.py", "tests/integrations/test_hf_families.py",
                 "tests/tooling/test_wheel.py", "tests/hardening/test_sync_removal.py", "tests/tooling/test_presets.py",
                 "tests/tooling/test_cli.py", "tests/torch/test_npu_adapter.py", "tests/integrations/test_distributed.py")


def pytest_collection_modifyitems(config, items):
    root = config.rootpath
    gone = [name for name in LONGEST_FIRST if not (root / name).is_file()]
    if gone:
        raise pytest.UsageError(f"tests/conftest.py LONGEST_FIRST names test files that do not exist: {', '.join(gone)}")
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.relative_to(root).as_posix() if item.path.is_relative_to(root)
                                         else "", len(rank)))
