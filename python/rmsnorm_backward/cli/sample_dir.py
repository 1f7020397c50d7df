# SPDX-License-Identifier: BSD-3-Clause
"""The msopgen sample-directory format that `golden --save-dir` writes and `--from-dir` reads:

\b
    D/case.json                      shapes and dtypes of the tensors, the attributes and the files below
    D/input/<dy|x|rstd|gamma|dres>.bin   the case's inputs (gamma absent without gamma, dres without dres)
    D/output/golden_<dx|dgamma>.bin  float64; both or neither (neither: the golden is computed again)
    D/output/output_<dx|dgamma>.bin  what the backend returned

Every problem with a directory's files is one sentence naming the file and the rule: InvalidInputError
for what the directory holds (a file missing, of the wrong size or kind, one the case does not list),
EnvironmentSetupError for what the system refuses (a file that cannot be read or written).
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import stat
from pathlib import Path

import numpy as np

from .. import attrs, host_memory, host_tiling, op_def
from ..errors import EnvironmentSetupError, InvalidInputError
from ..fileio import atomic_directory, file_kind

CASE_FILE = "case.json"
INT64_MAX = 2**63 - 1
_log = logging.getLogger(__name__)


def sample_files(case: dict) -> dict:
    """What a sample directory holds: relative path -> (tensor, shape, dtype name)."""
    op = op_def.load()
    files = {f"input/{t.name}.bin": (t.name, case["dtypes"][t.name]) for t in op.inputs if t.name in case["shapes"]}
    for t in op.outputs:
        files[f"output/golden_{t.name}.bin"] = (t.name, "float64")
        files[f"output/output_{t.name}.bin"] = (t.name, case["dtypes"][t.name])
    return {p: {"tensor": n, "shape": list(case["shapes"][n]), "dtype": d} for p, (n, d) in files.items()}


def numpy_dtype(name: str) -> np.dtype:
    return np.dtype(np.float64) if name == "float64" else op_def.DTYPES[name].numpy()


def _regular_size(path: Path, listed_in: Path) -> int:
    """The size of the regular file `path`, or the sentence saying why it is not one."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InvalidInputError(f"{path} is missing (listed in {listed_in})") from None
    except OSError as e:
        raise EnvironmentSetupError(f"{path} cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInputError(f"{path} is {file_kind(st.st_mode)}; it must be a regular file (listed in {listed_in})")
    return st.st_size


def _read_bin(d: Path, relative: str, entry: dict) -> np.ndarray:
    path = d / relative
    got = _regular_size(path, d / CASE_FILE)
    dtype = numpy_dtype(entry["dtype"])
    want = math.prod(entry["shape"]) * dtype.itemsize
    if got != want:
        raise InvalidInputError(f"{path} has {got} bytes; shape {entry['shape']} of {dtype.name} needs {want}")
    try:
        with open(path, "rb") as f:
            return np.fromfile(f, dtype=dtype).reshape(entry["shape"])
    except OSError as e:
        raise EnvironmentSetupError(f"{path} cannot be read ({e.strerror or e})") from None


# How deep case.json may nest ({"shapes": {"x": [..]}} is 3): a bound far above that, so the parser
# never recurses into a file made to exhaust the stack.
MAX_NESTING = 16
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _nesting(text: str) -> int:
    """The deepest nesting of JSON arrays and objects in `text` (strings skipped)."""
    depth = deepest = 0
    for c in _STRING.sub("", text):
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def _dims(name: str, dims) -> tuple[int, ...]:
    """A tensor's shape from case.json: a list of integers from 0 to int64's maximum (a float, even
    4.0, is refused: a shape is counted, not measured)."""
    if not isinstance(dims, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise ValueError(f"{name}'s shape must be a list of integers (got {dims!r:.80})")
    if any(not 0 <= d <= INT64_MAX for d in dims):
        raise ValueError(f"{name}'s shape {dims!r:.80} has a dim outside 0..{INT64_MAX}")
    return tuple(dims)


def _read_case(meta: Path) -> dict:
    _regular_size(meta, meta.parent)
    try:
        with open(meta, "rb") as f:
            text = f.read().decode("utf-8")
    except OSError as e:
        raise EnvironmentSetupError(f"{meta} cannot be read ({e.strerror or e})") from None
    except UnicodeDecodeError as e:
        raise InvalidInputError(f"{meta} is not a valid case description (not UTF-8 text: {e.reason})") from None
    try:
        if _nesting(text) > MAX_NESTING:
            raise ValueError(f"nested more than {MAX_NESTING} deep")
        raw = json.loads(text)
        for key, value in (("the file", raw), *((f"its {k}", raw.get(k, {}) if isinstance(raw, dict) else None)
                                               for k in ("shapes", "dtypes", "attrs"))):
            if not isinstance(value, dict):
                raise ValueError(f"{key} must be a JSON object (got {type(value).__name__})")
        op = op_def.load()
        if raw.get("op") != op.type:
            raise ValueError(f"its op must be {op.type!r} (got {raw.get('op')!r})")
        names = {t.name for t in op.tensors}
        unknown = sorted(set(raw["shapes"]) - names) + sorted(set(raw["dtypes"]) - set(raw["shapes"]) - names)
        if unknown:
            raise ValueError(f"{op.type} has no tensor {', '.join(map(repr, unknown))} (its tensors: "
                             f"{', '.join(t.name for t in op.tensors)})")
        case = {"shapes": {n: _dims(n, s) for n, s in raw["shapes"].items()}, "dtypes": raw["dtypes"],
                "attrs": attrs.check(raw.get("attrs", {}), has_gamma="gamma" in raw["shapes"])}  # absent: defaults
        missing = [t.name for t in op_def.load().tensors  # an optional tensor: both or neither
                   if (not t.optional or t.name in case["shapes"] or t.name in case["dtypes"])
                   and (t.name not in case["shapes"] or t.name not in case["dtypes"])]
        if missing:
            raise ValueError(f"no shape or dtype for {', '.join(missing)}")
        if any(name not in op_def.DTYPES for name in case["dtypes"].values()):
            raise ValueError(f"dtypes must be among {', '.join(op_def.DTYPES)}")
        host_tiling.check_outputs(case["shapes"], case["dtypes"])  # else the comparison would fail unclearly
        if raw.get("files") != sample_files(case):
            raise ValueError("its 'files' table does not match the shapes and dtypes")
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InvalidInputError(f"{meta} is not a valid case description ({e})") from None
    return case


def read_case(d: Path, soc: str) -> dict:
    """The case of sample directory `d`, checked by the tiling before any .bin is read."""
    meta = d / CASE_FILE
    if not os.path.lexists(meta):
        raise InvalidInputError(f"--from-dir {d} has no {CASE_FILE} ({meta} is missing): make samples with --save-dir")
    case = _read_case(meta)
    try:
        host_memory.golden_run(case["shapes"], case["dtypes"], soc=soc, **case["attrs"])
    except InvalidInputError as e:  # the tiling's rules or the host's memory refuse the case: name its file
        raise InvalidInputError(f"{meta}: {e}") from None
    op = op_def.load()
    for t in op.inputs:  # a tensor's file the case does not describe: the user meant something else
        path = d / "input" / f"{t.name}.bin"
        if t.name not in case["shapes"] and os.path.lexists(path):
            raise InvalidInputError(f"{path} is not part of this case: {meta} describes no {t.name}; remove the "
                                    f"file or give {t.name} a shape and dtype in {CASE_FILE}")
    return case


def read_inputs(d: Path, case: dict) -> dict:
    files = sample_files(case)
    return {t.name: _read_bin(d, f"input/{t.name}.bin", files[f"input/{t.name}.bin"]) for t in op_def.load().inputs
            if f"input/{t.name}.bin" in files}


def read_golden(d: Path, case: dict) -> dict | None:
    """The golden of every output, or None when the directory holds none (then it is computed again,
    said on the log); one without the other is refused."""
    files = sample_files(case)
    paths = {t.name: f"output/golden_{t.name}.bin" for t in op_def.load().outputs}
    present = {n: p for n, p in paths.items() if os.path.lexists(d / p)}
    if not present:
        _log.info("%s holds no golden_*.bin: computing the float64 golden", d / "output")
        return None
    absent = sorted(set(paths) - set(present))
    if absent:
        raise InvalidInputError(f"{d / paths[absent[0]]} is missing while {d / next(iter(present.values()))} is "
                                "there: a sample directory holds the golden of every output or of none")
    return {n: _read_bin(d, p, files[p]) for n, p in paths.items()}


def write_sample_dir(d: Path, case: dict, inputs: dict, gold: dict, outputs: dict) -> None:
    """The sample directory `d`, written under a temporary name and renamed at the end (nothing is
    left behind by an error or an interrupt)."""
    files = sample_files(case)
    arrays = {f"input/{n}.bin": a for n, a in inputs.items()}
    arrays.update({f"output/golden_{n}.bin": gold[n] for n in gold})
    arrays.update({f"output/output_{n}.bin": outputs[n] for n in outputs})
    meta = {"op": op_def.load().type, "shapes": {n: list(s) for n, s in case["shapes"].items()},
            "dtypes": case["dtypes"], "attrs": case["attrs"], "files": files}
    try:
        with atomic_directory(d) as work:
            (work / "input").mkdir()
            (work / "output").mkdir()
            for relative, entry in files.items():
                np.ascontiguousarray(arrays[relative], numpy_dtype(entry["dtype"])).tofile(work / relative)
            (work / CASE_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    except OSError as e:
        raise EnvironmentSetupError(f"{d} cannot be written ({e.strerror or e}: {e.filename or d})") from None
