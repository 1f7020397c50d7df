# SPDX-License-Identifier: BSD-3-Clause
"""A wheel that works anywhere: built from this checkout, installed into a fresh virtual environment
outside it beside the twin's own wheel (its dependency, built from twin/), and run from there (--help,
golden, doctor, gen, run_kernel on the demo kernel), with nothing read from the checkout. Afterwards the checkout's own install still works: wheel and editable
builds use separate build folders."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from rmsnorm_backward import resources

from cpu_build import locked

ROOT = resources.checkout()
pytestmark = pytest.mark.skipif(ROOT is None, reason="builds the wheel from a source checkout")
# What the package imports at run time, taken from this environment (no network, no second install).
DEPENDENCIES = ("numpy", "ml_dtypes", "jinja2", "markupsafe", "click", "tqdm")


def run(cmd, cwd, timeout=900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory, cpu_build) -> Path:
    """The operator's wheel, built in the run's cpu preset build (so the extensions' objects compile
    once), with the twin's wheel beside it in the same directory."""
    for backend in ("scikit_build_core", "pybind11"):
        pytest.importorskip(backend, reason="the wheel is built without isolation, from this environment")
    dist = tmp_path_factory.mktemp("dist")
    with locked(cpu_build):
        for source, build in ((ROOT, cpu_build), (ROOT / "twin", cpu_build / "twin-wheel")):
            done = run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w",
                        dist, "-C", f"build-dir={build}", source], cwd=dist)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (built,) = dist.glob("rmsnorm_backward-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv (no system site-packages) with the wheel, its dependencies on a .pth line each."""
    env = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    (twin,) = wheel.parent.glob("ascendc_twin-*.whl")
    done = run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel, twin],
               cwd=env)
    assert done.returncode == 0, done.stderr
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=env).stdout.strip())
    homes = {str(Path(__import__(name).__file__).resolve().parent.parent) for name in DEPENDENCIES}
    (site / "dependencies_of_the_test.pth").write_text("\n".join(sorted(homes)) + "\n")
    return env


def test_the_wheel_carries_what_the_package_reads(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("op_def/rms_norm_backward.toml", "op_kernel/rms_norm_backward.cpp",
                   "op_kernel/rms_norm_backward_tiling_data.h", "cmake/cann_default_paths.txt"):
        assert f"rmsnorm_backward/{resources.DATA_DIR}/{needed}" in names, needed
    for needed in ("rmsnorm_backward/codegen/generate.py", "rmsnorm_backward/codegen/op_proto.h.j2"):
        assert needed in names, needed
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_twin_is_a_dependency_with_one_owner(wheel):
    """ascendc_twin is in the twin's wheel only; the operator's names it as a dependency."""
    (twin,) = wheel.parent.glob("ascendc_twin-*.whl")
    ours, theirs = (set(zipfile.ZipFile(w).namelist()) for w in (wheel, twin))
    assert not [n for n in ours if n.startswith("ascendc_twin/")]
    for needed in ("ascendc_twin/__init__.py", "ascendc_twin/data/include/twin/platform.h",
                   "ascendc_twin/data/include/kernel_operator.h", "ascendc_twin/data/demo/scaled_sum.cpp"):
        assert needed in theirs, needed
    (metadata,) = [n for n in ours if n.endswith(".dist-info/METADATA")]
    requires = [line for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist: ascendc-twin")]
    assert requires == ["Requires-Dist: ascendc-twin@ file:./twin"] or requires == ["Requires-Dist: ascendc-twin @ file:./twin"]


def test_the_installed_package_runs_outside_the_checkout(installed, tmp_path):
    tool = installed / "bin" / "rmsnorm-backward"
    where = run([installed / "bin" / "python", "-c", "import rmsnorm_backward as r, rmsnorm_backward.resources as s; "
                 "print(r.__file__); print(s.checkout()); print(s.root())"], cwd=tmp_path)
    package, checkout, data = where.stdout.split()
    assert Path(package).is_relative_to(installed) and checkout == "None" and Path(data).is_relative_to(installed)

    helped = run([tool, "--help"], cwd=tmp_path)
    assert helped.returncode == 0 and all(c in helped.stdout for c in ("golden", "gen", "doctor", "bench"))

    golden = run([tool, "golden", "--shape", "3,40", "--dtype", "fp16", "--seed", "5", "--json"], cwd=tmp_path)
    assert golden.returncode == 0, golden.stderr
    report = json.loads(golden.stdout)
    assert report["passed"] and report["backend"] == "twin" and report["reports"]["dx"]["size"] == 120

    doctor = run([tool, "doctor", "--json"], cwd=tmp_path)
    assert doctor.returncode == 0, doctor.stderr
    assert {b["name"]: b["usable"] for b in json.loads(doctor.stdout)["backends"]}["twin"]

    tree = tmp_path / "tree"
    tree.mkdir()
    assert run([tool, "gen", "--root", tree], cwd=tmp_path).returncode == 0
    assert run([tool, "gen", "--check", "--root", tree], cwd=tmp_path).returncode == 0
    assert (tree / "CMakePresets.json").read_text() == (ROOT / "CMakePresets.json").read_text()


DEMO = """
import json, numpy as np
from ascendc_twin import resources, run_kernel
rng = np.random.default_rng({seed})
tiles, tile_len = 5, 128
x, y = (rng.standard_normal(tiles * tile_len).astype(np.float32) for _ in range(2))
z, sums = np.zeros_like(x), np.zeros(tiles, np.float32)
run_kernel(resources.path("demo/scaled_sum.cpp"), "scaled_sum",
           [x, y, z, sums, np.array([tiles, tile_len], np.uint32)], block_dim=3)
want = (x * y + x) * np.float32(0.5)
print(json.dumps({{"z": bool(np.array_equal(z, want)),
                   "sums": float(np.max(np.abs(sums - want.reshape(tiles, -1).sum(axis=1, dtype=np.float64))))}}))
"""


def test_run_kernel_on_the_demo_from_the_installed_package(installed, tmp_path, rng):
    done = run([installed / "bin" / "python", "-c", DEMO.format(seed=int(rng.integers(2**32)))], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["z"] and result["sums"] < 1e-3


def test_the_checkouts_install_still_works_after_the_wheel_build(wheel, tmp_path):
    if Path(sys.prefix) != ROOT / ".venv":
        pytest.skip("./build.sh run needs the checkout's .venv as the test environment")
    done = run([ROOT / "build.sh", "run", "--shape", "2,24"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "PASS"
