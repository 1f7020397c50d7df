# SPDX-License-Identifier: BSD-3-Clause
"""framework/atb_plugin and examples/atb compile against the public ATB headers (ATB_SRC) with
-Wall -Wextra -Werror: 0 errors, 0 warnings. AscendCL/aclnn come from tests/tooling/stub_cann (the ATB
checkout ships none). The include trace proves the headers read are ATB_SRC's own."""
import subprocess

import pytest

from atb_build import PLUGIN_SOURCES, ROOT, atb_include, flags

SOURCES = [p for p in PLUGIN_SOURCES if p.parent.name == "atb_plugin"] + [ROOT / "examples" / "atb" / "main.cpp"]


@pytest.mark.parametrize("source", SOURCES, ids=[f"{p.parent.name}/{p.name}" for p in SOURCES])
def test_compiles_against_the_public_atb_headers(tmp_path, source):
    include = atb_include()
    proc = subprocess.run(flags(include) + ["-H", "-c", str(source), "-o", str(tmp_path / "out.o")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    trace = [line.lstrip(". ") for line in proc.stderr.splitlines() if line.startswith(".")]
    diagnostics = [line for line in proc.stderr.splitlines() if not line.startswith(".") and
                   ("error" in line or "warning" in line)]
    assert diagnostics == []
    atb_headers = {p for p in trace if p.startswith(str(include / "atb"))}
    if "atb_plugin" in str(source) and source.name != "rms_norm_backward_operation.cpp":
        assert atb_headers == set()  # the plain rules and the ACL spellings need no ATB header
    else:
        assert str(include / "atb" / "operation.h") in atb_headers and str(include / "atb" / "types.h") in atb_headers


def test_param_keeps_the_layout_of_atb_train_rms_norm_backward_param(tmp_path):
    """The static_assert in rms_norm_backward_operation.cpp compares against ATB's own struct; a
    one-byte change of ours must stop the build (a copy of the source beside a changed header)."""
    include = atb_include()
    source = PLUGIN_SOURCES[0]
    header = (source.parent / "rms_norm_backward_operation.h").read_text()
    assert "uint8_t rsv[8] = {0};" in header
    (tmp_path / "rms_norm_backward_operation.h").write_text(header.replace("uint8_t rsv[8]", "uint8_t rsv[9]"))
    (tmp_path / source.name).write_text(source.read_text())
    proc = subprocess.run(flags(include) + ["-c", str(tmp_path / source.name), "-o", str(tmp_path / "out.o")],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "keeps the layout of atb::train::RmsNormBackwardParam" in proc.stderr
