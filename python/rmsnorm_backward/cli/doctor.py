# SPDX-License-Identifier: BSD-3-Clause
"""Report CANN, the NPU, torch, torch_npu, the compilers and the twin, and which backends are usable.

Exit status 1 when no backend is usable; 2 when ASCEND_HOME_PATH is set but names no CANN toolkit
(the report, or its JSON with the sentence as cann.env_problem, is printed first, then the sentence
as the error)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import click

from .. import backends
from ._common import CONTEXT, CliError, print_json, progress

# torch without backend autoload: an installed-but-broken torch_npu must not take torch down with it.
_TORCH_PROBE = "import json, torch; print(json.dumps({'version': torch.__version__}))"


def _run(cmd: list[str], timeout: float = 60.0, env_extra: dict | None = None) -> tuple[int, str]:
    env = dict(os.environ, **(env_extra or {}))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 1, str(e)
    return proc.returncode, (proc.stdout if proc.returncode == 0 else proc.stderr or proc.stdout).strip()


def _tool(name: str, path: str | None = None) -> dict:
    path = path or shutil.which(name)
    if path is None:
        return {"found": False, "path": None, "version": None}
    _, out = _run([path, "--version"])
    match = re.search(r"\d+\.\d+(\.\d+)?", out)
    return {"found": True, "path": path, "version": match.group(0) if match else None}


def _torch() -> dict:
    code, out = _run([sys.executable, "-c", _TORCH_PROBE], env_extra={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    if code != 0:
        return {"found": False, "version": None, "error": out.splitlines()[-1] if out else None}
    return {"found": True, **json.loads(out.splitlines()[-1]), "error": None}


def _npu_smi() -> dict:
    path = shutil.which("npu-smi")
    if path is None:
        return {"found": False, "soc": None}
    code, out = _run([path, "info"])
    match = re.search(r"\b(Ascend\s?9\d\d\w*|9\d\d[A-Z]\d?)", out) if code == 0 else None
    return {"found": True, "soc": match.group(0) if match else None}


def collect(show_progress: bool) -> dict:
    steps = ["cann", "npu", "torch", "torch_npu", "compilers", "backends"]
    found: dict = {}
    with progress(len(steps), "doctor", show_progress) as bar:
        found["cann"] = backends.find_cann()
        bar.update()
        found["npu"] = _npu_smi()
        bar.update()
        found["torch"] = _torch()
        bar.update()
        # Probed only where CANN is: without it, importing torch_npu ends the process it runs in.
        found["torch_npu"] = backends.probe_npu() if found["cann"]["path"] else {"ok": False, "error": "not probed: CANN is absent"}
        bar.update()
        found["compilers"] = {name: _tool(name) for name in ("g++", "cmake", "ninja")}
        if found["cann"]["path"]:  # CANN's Ascend C compiler, for the NPU build
            ccec = os.path.join(found["cann"]["path"], "compiler", "ccec_compiler", "bin", "ccec")
            found["compilers"]["ccec"] = _tool("ccec", ccec if os.path.isfile(ccec) else None)
        bar.update()
        found["backends"] = [b.to_dict() for b in (backends.twin_backend(), backends.npu_backend(found["cann"]))]
        bar.update()
    return found


def render(found: dict) -> str:
    cann = found["cann"]
    lines = [
        "CANN:      " + (f"{cann['path']} (version {cann['version'] or 'unknown'})" if cann["path"]
                         else f"not found (looked in {', '.join(cann['looked'])})"),
        "NPU:       " + (found["npu"]["soc"] or "npu-smi found, no device named") if found["npu"]["found"]
        else "NPU:       none visible (no npu-smi)",
        "torch:     " + (found["torch"]["version"] if found["torch"]["found"] else f"not importable ({found['torch']['error']})"),
        "torch_npu: " + (found["torch_npu"].get("torch_npu", "present") if found["torch_npu"]["ok"]
                         else found["torch_npu"]["error"]),
    ]
    for name, tool in found["compilers"].items():
        lines.append(f"{name + ':':11s}" + (f"{tool['version'] or '?'} ({tool['path']})" if tool["found"] else "not found"))
    lines.append("backends:")
    for b in found["backends"]:
        lines.append(f"  {b['name']:5s} {'usable' if b['usable'] else 'not usable'}: {b['detail']}"
                     + (f"; next: {b['next_step']}" if b["next_step"] else ""))
    usable = [b["name"] for b in found["backends"] if b["usable"]]
    lines.append(f"golden runs on: {usable[0] if usable else 'nothing yet (see next steps above)'}")
    return "\n".join(lines)


@click.command("doctor", context_settings=CONTEXT, help=__doc__,
               short_help="report CANN, NPU, torch, torch_npu, compilers and the twin, and the usable backends")
@click.option("--json", "as_json", is_flag=True, help="print the findings as JSON")
def command(as_json) -> int:
    found = collect(show_progress=not as_json)
    if as_json:
        print_json(found)
    else:
        click.echo(render(found))
    if found["cann"]["env_problem"]:
        CliError(found["cann"]["env_problem"]).show()
        return CliError.exit_code
    return 0 if any(b["usable"] for b in found["backends"]) else 1
