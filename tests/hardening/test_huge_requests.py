# SPDX-License-Identifier: BSD-3-Clause
"""Validation before allocation (rmsnorm_backward.host_tiling, rmsnorm_backward.host_memory): a request too large for the tiling or
for this machine is refused on its shapes alone, in one sentence and at once, by the CLI's golden
and by simulate (broadcast views are not densified first); a bad --soc is refused before any input
exists. The torch entry points: tests/torch/test_validate_first.py."""
import json
import re
import time

import ml_dtypes  # noqa: F401  (imported here: the timings exclude imports)
import numpy as np
import pytest

from rmsnorm_backward import _tiling, host_memory, op_def  # noqa: F401  (imported here: the timings exclude imports)
from rmsnorm_backward.cli import golden as golden_cli
from rmsnorm_backward.cli import sample_dir
from rmsnorm_backward.cli import main
from rmsnorm_backward.errors import InvalidInputError
from rmsnorm_backward.golden import golden
from rmsnorm_backward.precision import compare
from rmsnorm_backward.simulate import simulate

SOON = 2.0  # seconds: generous for a check on shapes; densifying 2^31 elements took 30-50 s

GAMMA_LIMIT = r"gamma must have 1 to 2\^30 elements \(got 2147483648\)\."
MEMORY_LIMIT = r"needs about [0-9.]+ GiB of host memory, more than the [0-9.]+ GiB available here; use smaller shapes\."


@pytest.fixture
def no_inputs_made(monkeypatch):
    """Fails the test if the CLI gets as far as making its random inputs."""
    def refuse(case, seed):
        raise AssertionError(f"inputs were made for {case['shapes']['x']} before the request was refused")

    monkeypatch.setattr(golden_cli, "random_inputs", refuse)


@pytest.mark.parametrize("argv, message", [
    (["--shape", "1,2147483648"], "--shape 1,2147483648: " + GAMMA_LIMIT),
    (["--shape", "100000,100000"], r"--shape 100000,100000: golden on x \[100000, 100000\] float32 " + MEMORY_LIMIT),
    (["--shape", "1048576,1048576", "--dtype", "bf16"],
     r"--shape 1048576,1048576: golden on x \[1048576, 1048576\] bfloat16 " + MEMORY_LIMIT),
    (["--shape", "4,8", "--soc", "Ascend310P3"], r"Invalid value for '--soc': soc must be one of .*, got 'Ascend310P3'"),
])
def test_cli_golden_refuses_before_making_inputs(capsys, no_inputs_made, argv, message):
    start = time.monotonic()
    assert main(["golden", *argv]) == 2
    assert time.monotonic() - start < SOON
    captured = capsys.readouterr()
    # click's style: at most its usage hint, then the one sentence as its `Error:` line.
    lines = [line for line in captured.err.strip().splitlines() if line and not line.startswith(("Usage: ", "Try "))]
    assert captured.out == "" and len(lines) == 1, captured.err
    assert re.fullmatch(r"Error: " + message, lines[0]), lines[0]


def test_cli_golden_reads_no_input_file_of_a_refused_case(capsys, tmp_path, monkeypatch):
    # A sample directory whose case.json asks for 2^31 gamma elements and whose .bin files are
    # too short for it: the tiling's sentence must come first, not a byte count.
    monkeypatch.setattr(sample_dir, "_read_bin", lambda *a: pytest.fail("an input file was read"))
    n = 2147483648
    case = {"op": op_def.load().type, "shapes": {"dy": [1, n], "x": [1, n], "rstd": [1, 1], "gamma": [n], "dx": [1, n], "dgamma": [n]},
            "dtypes": dict.fromkeys(("dy", "x", "rstd", "gamma", "dx", "dgamma"), "float32")}
    (tmp_path / "case.json").write_text(json.dumps({**case, "files": sample_dir.sample_files(case)}))
    assert main(["golden", "--from-dir", str(tmp_path)]) == 2
    assert re.search(GAMMA_LIMIT, capsys.readouterr().err)


def test_the_memory_limit_follows_what_is_available(monkeypatch, rng):
    rows, cols = int(rng.integers(16, 64)), int(rng.integers(64, 512))
    shapes = {"dy": (rows, cols), "x": (rows, cols), "rstd": (rows, 1), "gamma": (cols,)}
    dtypes = {"dy": "float16", "x": "float16", "rstd": "float32", "gamma": "float16"}
    monkeypatch.setattr(host_memory, "available_host_bytes", lambda: host_memory.golden_bytes(shapes))  # golden alone fits
    with pytest.raises(InvalidInputError, match=rf"golden on x \[{rows}, {cols}\] float16 " + MEMORY_LIMIT):
        host_memory.golden_run(shapes, dtypes, soc="Ascend910B2")
    monkeypatch.setattr(host_memory, "available_host_bytes", lambda: 2**50)
    assert host_memory.golden_run(shapes, dtypes, soc="Ascend910B2")["fields"]["cols"] == cols
    monkeypatch.setattr(host_memory, "available_host_bytes", lambda: None)  # unknown: no limit claimed
    assert host_memory.golden_run(shapes, dtypes, soc="Ascend910B2")["fields"]["rows"] == rows


@pytest.mark.parametrize("shape, gamma, message", [
    ((1, 2**31), (2**31,), GAMMA_LIMIT),
    ((2**20, 2**20), (2**20,), r"simulate on x \[1048576, 1048576\] float16 " + MEMORY_LIMIT),
])
def test_simulate_refuses_huge_broadcast_views_without_densifying(shape, gamma, message):
    one = np.float16(1)
    start = time.monotonic()
    with pytest.raises(InvalidInputError, match=message):
        simulate(np.broadcast_to(one, shape), np.broadcast_to(one, shape),
                 np.broadcast_to(np.float32(1), shape[:-1] + (1,)), np.broadcast_to(one, gamma))
    assert time.monotonic() - start < SOON


def test_simulate_densifies_broadcast_views_it_accepts(rng):
    rows, cols = int(rng.integers(2, 40)), int(rng.integers(8, 300))
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    dy_row = rng.standard_normal(cols).astype(np.float32)
    rstd = rng.uniform(0.5, 2, (rows, 1)).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, cols).astype(np.float32)
    dy = np.broadcast_to(dy_row, (rows, cols))  # zero row stride, read-only
    dx, dgamma, _ = simulate(dy, x, rstd, gamma)
    want_dx, want_dgamma = golden(dy, x, rstd, gamma)
    assert compare(dx, want_dx, "float32").passed
    assert compare(dgamma, want_dgamma, "float32", round_golden=False).passed
