"""What every subcommand shares: one-sentence errors, JSON output, atomic file writes, progress."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path


class CliError(Exception):
    """A bad option or an environment problem: printed as one sentence, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse, except that a bad option is one sentence on stderr (no usage dump) and exit 2."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: {message} (see `{self.prog} --help`)\n")
        sys.exit(2)


def to_jsonable(value):
    """Plain JSON (no NaN/Infinity literals): non-finite floats become the strings 'nan', 'inf', '-inf'."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


def print_json(value) -> None:
    json.dump(to_jsonable(value), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file in the same directory, then rename: never a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def progress(total: int, desc: str, enabled: bool):
    """A tqdm bar on stderr when it is a terminal and enabled (never with --json)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, disable=None if enabled else True, file=sys.stderr, leave=False)
