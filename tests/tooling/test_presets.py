# SPDX-License-Identifier: BSD-3-Clause
"""CMakePresets.json: the cpu preset builds the twin extension; an NPU preset without CANN stops at
configure time with one sentence naming what is missing and where it looked."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rmsnorm_backward import backends, op_def, resources

ROOT = resources.checkout()
CANN_HERE = any((Path(p) / "include/acl/acl.h").is_file() for p in backends.cann_candidates())


def configure(preset: str, build_dir: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["cmake", "--preset", preset, "-S", str(ROOT), "-B", str(build_dir)],
                          capture_output=True, text=True, env=env, timeout=300)


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.skipif(CANN_HERE, reason="CANN is installed here: the NPU presets configure")
@pytest.mark.parametrize("soc", op_def.load().socs)
@pytest.mark.parametrize("home", [None, "/nonexistent/cann"])
def test_npu_preset_without_cann_fails_with_a_clear_sentence(tmp_path, soc, home):
    env = {k: v for k, v in os.environ.items() if k != "ASCEND_HOME_PATH"}
    if home:
        env["ASCEND_HOME_PATH"] = home
    proc = configure(soc, tmp_path / "b", env)
    assert proc.returncode != 0
    err = one_line(proc.stderr)
    assert (f"The {soc} preset needs the CANN toolkit, but no compiler/tikcpp/ascendc_kernel_cmake/asc-config.cmake "
            "was found in") in err
    for looked in ([home] if home else []) + list(backends.CANN_DEFAULT_PATHS):
        assert looked in err
    assert "pybind11" not in err  # the CANN check comes first


def test_npu_presets_carry_canns_cache_variables():
    presets = {p["name"]: p for p in json.loads((ROOT / "CMakePresets.json").read_text())["configurePresets"]}
    op = op_def.load()
    for soc in op.socs:
        cache = presets[soc]["cacheVariables"]
        assert cache["ASCEND_COMPUTE_UNIT"] == soc and cache["vendor_name"] == op.vendor
        assert cache["SOC_VERSION"] == op.soc_chips[soc]
        assert {"ASCEND_CANN_PACKAGE_PATH", "ENABLE_SOURCE_PACKAGE", "ENABLE_BINARY_PACKAGE"} <= set(cache)
        assert presets[soc]["binaryDir"] == "${sourceDir}/build_out"
    assert "ASCEND_COMPUTE_UNIT" not in presets["cpu"]["cacheVariables"]


def test_cpu_preset_builds_both_extensions(cpu_build):
    (twin,) = cpu_build.glob("twin/_twin*.so")
    (tiling,) = cpu_build.glob("_tiling*.so")
    code = ("import sys; sys.path[:0] = sys.argv[1:]; import _twin, _tiling; "
            "print(' '.join(row['name'] for row in _twin.soc_table())); "
            "print(_tiling.compute_tiling([4, 64], [4, 64], [4, 1], [64], *['float32'] * 4)['path'])")
    out = subprocess.run([sys.executable, "-c", code, str(twin.parent), str(tiling.parent)], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert {"Ascend910B2", "Ascend910_93"} <= set(out[0].split()) and out[1] == "small_cols"


@pytest.mark.skipif(CANN_HERE, reason="CANN is installed here: build.sh would pick an NPU preset")
def test_build_sh_without_cann_names_what_is_missing_for_an_npu_preset():
    env = {k: v for k, v in os.environ.items() if k != "ASCEND_HOME_PATH"}
    proc = subprocess.run([str(ROOT / "build.sh"), "build", "--preset", "ascend910b"], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode != 0
    assert "The ascend910b preset needs the CANN toolkit" in one_line(proc.stderr)


@pytest.mark.parametrize("args", [["build", "--preset"], ["build", "--fast"]])
def test_build_sh_bad_build_options_are_one_sentence(args):
    proc = subprocess.run([str(ROOT / "build.sh"), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "build.sh: " in proc.stderr


def test_readme_npu_steps_name_real_presets_targets_and_options():
    readme = (ROOT / "docs" / "npu_build.md").read_text()
    steps = readme.split("## On a CANN machine", 1)[1].split("```")[1]
    presets = {p["name"] for p in json.loads((ROOT / "CMakePresets.json").read_text())["configurePresets"]}
    used = set(re.findall(r"cmake (?:--build )?--preset (\S+)", steps))
    assert used and used <= presets - {"cpu"}
    # the --target names are checked against the configured build graph in tests/conformance
    assert f"/vendors/{op_def.load().vendor}/bin/set_env.bash" in steps
    usage = (ROOT / "scripts" / "install.sh").read_text()
    for option in set(re.findall(r"\.run (--[\w-]+)", steps)):
        assert f"  {option} " in usage, option
