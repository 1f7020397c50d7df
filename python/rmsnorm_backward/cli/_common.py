# SPDX-License-Identifier: BSD-3-Clause
"""What every subcommand shares: click's error style with exit 2, options checked before any work,
JSON output, progress on stderr."""
from __future__ import annotations

import json
import logging
import math
import sys
from collections.abc import Mapping
from pathlib import Path

import click

from ..errors import InvalidInputError, TilingError
from ..fileio import check_writable_dir, output_kind, write_output

PROG = "rmsnorm-backward"
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class CliError(click.ClickException):
    """An environment problem or a bad combination found after parsing: `Error: <sentence>`, exit
    status 2 (1 is golden's "the precision standard failed")."""
    exit_code = 2


def refusal(error: InvalidInputError, typed: Mapping[str, str]) -> CliError:
    """The operator's refusal of what the options describe, as one sentence that starts with the
    options the user typed for it. `typed` maps the kind of a TilingError's rule ("shape", "dtype",
    "attr", "platform"), or "kind:tensor" where one tensor has options of its own (the more specific
    wins), to those options as typed, e.g. {"shape": "--shape 4,0", "dtype:gamma": "--gamma-dtype bf16"};
    any other InvalidInputError (the host memory the shapes need, a dim beyond int64) is the shape's."""
    if isinstance(error, TilingError):
        option = typed.get(f"{error.kind}:{error.tensor}") or typed.get(error.kind)
    else:
        option = typed.get("shape")
    return CliError(f"{option}: {error}" if option else str(error))


def check_soc(ctx, param, value: str) -> str:
    """--soc against the SoC table of the twin's extension, before anything runs."""
    from ..twin import soc_info

    try:
        soc_info(value)
    except InvalidInputError as e:
        raise click.BadParameter(str(e), ctx, param) from None
    return value


def writable_file(option: str, path: Path) -> None:
    """CliError now, before a long run, when `path` (an output file, written by save_file) could not
    be: a kind of file it refuses, or a directory where no file can be created."""
    try:
        how, target = output_kind(path)
        if how == "atomic":
            check_writable_dir(target.parent)
    except OSError as e:
        raise CliError(os_error(option, path, e)) from None


def os_error(option: str, path: Path, e: OSError) -> str:
    return f"{option} {path} cannot be written ({e.strerror or e}: {e.filename or path})"


def to_jsonable(value):
    """Plain JSON (no NaN/Infinity literals): non-finite floats become the strings 'nan', 'inf', '-inf'."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


def json_text(value) -> str:
    return json.dumps(to_jsonable(value), indent=2, allow_nan=False) + "\n"


def print_json(value) -> None:
    sys.stdout.write(json_text(value))


def save_file(option: str, path: Path, data) -> None:
    """fileio.write_output (a regular file atomically, a symlink followed, `-`, a FIFO or a
    character device in place), with a failure as one sentence naming the option."""
    try:
        write_output(path, data)
    except OSError as e:
        raise CliError(os_error(option, path, e)) from None


def progress(total: int, desc: str, enabled: bool):
    """A tqdm bar on stderr when it is a terminal and enabled (never with --json)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, disable=None if enabled else True, file=sys.stderr, leave=False)


class _Notices(logging.Handler):
    def emit(self, record):
        click.echo(f"{PROG}: {record.getMessage()}", err=True)


def show_notices() -> None:
    """The package's INFO messages and the twin's warnings (a damaged kernel cache entry compiled
    again) on stderr, once."""
    for name, level in (("rmsnorm_backward", logging.INFO), ("ascendc_twin", logging.WARNING)):
        logger = logging.getLogger(name)
        if not any(isinstance(h, _Notices) for h in logger.handlers):
            handler = _Notices()
            handler.setLevel(level)
            logger.addHandler(handler)
            logger.setLevel(min(logger.getEffectiveLevel(), level))
