# SPDX-License-Identifier: BSD-3-Clause
"""Pytest fixtures for testing kernels on the twin; a conftest imports the ones it wants:

    from ascendc_twin.testing import pytest_report_header, read_only_dir, rng, run_source  # noqa: F401

Every run draws a fresh seed (shown in pytest's header); TWIN_TEST_SEED=<seed> repeats a run. Each
test's generator is seeded by (run seed, test id), so one test reproduces on its own too.
"""
from __future__ import annotations

import os
import secrets
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from . import run_kernel

SEED_VARIABLE = "TWIN_TEST_SEED"
SEED = int(os.environ.get(SEED_VARIABLE) or secrets.randbits(32))
# pytest-xdist workers import this module after the controller: they inherit its seed through the environment.
os.environ[SEED_VARIABLE] = str(SEED)


def pytest_report_header(config):
    return f"test seed {SEED} (repeat with {SEED_VARIABLE}={SEED})"


@pytest.fixture
def rng(request) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(request.node.nodeid.encode())])


@pytest.fixture
def run_source(tmp_path):
    """run_source(text, name, args, **run_kernel_options): writes `text` as a kernel source under
    this test's tmp_path and launches its entry `name` on the twin (at -O0 unless told otherwise:
    small kernels, run once, build a third faster)."""

    def run(text: str, name: str, args, **options):
        path = tmp_path / f"{name}_{zlib.crc32(text.encode()):08x}.cpp"
        path.write_text(text)
        options.setdefault("optimize", False)
        return run_kernel(path, name, args, **options)

    return run


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory no file can be created in: a mode 0555 one, or where that does not stop this user
    (root), a read-only system directory; skipped when neither refuses a file."""
    mine = tmp_path / "read_only"
    mine.mkdir()
    mine.chmod(0o555)
    try:
        for candidate in (mine, Path("/sys"), Path("/proc")):
            try:
                tempfile.TemporaryFile(dir=candidate).close()
            except OSError:
                yield candidate
                return
        pytest.skip("no directory here refuses a new file (root without a read-only mount)")
    finally:
        mine.chmod(0o755)
