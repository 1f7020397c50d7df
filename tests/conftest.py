"""The one conftest: a reproducible random generator per test and a helper that runs kernel text.

Every run draws a fresh seed (shown in pytest's header); RMSNORM_TEST_SEED=<seed> repeats a run.
Each test's generator is seeded by (run seed, test id), so one test reproduces on its own too.
"""
from __future__ import annotations

import os
import secrets
import zlib

import numpy as np
import pytest

SEED = int(os.environ.get("RMSNORM_TEST_SEED") or secrets.randbits(32))


def pytest_report_header(config):
    return f"rmsnorm_backward: test seed {SEED} (repeat with RMSNORM_TEST_SEED={SEED})"


@pytest.fixture
def rng(request) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(request.node.nodeid.encode())])


@pytest.fixture
def run_source(tmp_path):
    """run_source(text, name, args, **run_kernel_options): writes `text` as a kernel source under
    this test's tmp_path (outside the project tree) and launches its entry `name` on the twin."""
    from rmsnorm_backward.twin import run_kernel

    def run(text: str, name: str, args, **options):
        path = tmp_path / f"{name}_{zlib.crc32(text.encode()):08x}.cpp"
        path.write_text(text)
        return run_kernel(path, name, args, **options)

    return run
