# SPDX-License-Identifier: BSD-3-Clause
"""The twin's tests: a reproducible random generator per test and the other fixtures of
ascendc_twin.testing."""
from ascendc_twin.testing import pytest_report_header, read_only_dir, rng, run_source  # noqa: F401
