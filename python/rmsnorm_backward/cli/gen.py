# SPDX-License-Identifier: BSD-3-Clause
"""Render every file that op_def restates (rmsnorm_backward/codegen): the OpDef registration, op proto, op
info per SoC, aclnn header, the tiling data in both forms and CMakePresets.json."""
from __future__ import annotations

from pathlib import Path

import click

from .. import op_def, resources
from ..codegen import generate as generator
from ._common import CONTEXT, CliError, os_error, print_json


def _default_root():
    return resources.checkout()


@click.command("gen", context_settings=CONTEXT, help=__doc__,
               short_help="generate the op registration, op proto, op info, aclnn header and presets from op_def")
@click.option("--check", is_flag=True, help="write nothing; exit 1 naming every generated file that differs from op_def")
@click.option("--op-def", "op_def_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=op_def.DEFAULT_PATH, show_default=True, metavar="TOML", help="the operator definition")
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=_default_root,
              metavar="DIR", help="where the generated tree lives (default: the source checkout)")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
def command(check, op_def_path, root, as_json) -> int:
    if root is None:
        raise click.BadParameter("is needed outside a source checkout: name the tree to generate into",
                                 param_hint="'--root'")
    if not op_def_path.is_file():  # a FIFO would block the reader
        raise click.BadParameter(f"{op_def_path} is not a regular file", param_hint="'--op-def'")
    try:
        op = op_def.load(op_def_path)
    except OSError as e:
        raise click.BadParameter(f"{op_def_path} cannot be read ({e.strerror or e})", param_hint="'--op-def'") from None
    except (KeyError, ValueError) as e:  # tomllib.TOMLDecodeError is a ValueError
        raise click.BadParameter(f"{op_def_path} is not a valid operator definition ({e})",
                                 param_hint="'--op-def'") from None
    root = root.resolve()
    if check:
        stale = generator.stale(root, op)
        if as_json:
            print_json({"check": True, "stale": stale, "ok": not stale})
        elif stale:
            click.echo(f"{len(stale)} generated file(s) differ from {op_def_path.name}: {', '.join(stale)}; "
                       f"run `rmsnorm-backward gen` (edit op_def or the templates, not the outputs)")
        else:
            click.echo(f"all {len(generator.render_all(op, root))} generated files are up to date")
        return 1 if stale else 0
    try:
        changed = generator.write(root, op)
    except OSError as e:
        raise CliError(os_error("--root", root, e)) from None
    if as_json:
        print_json({"check": False, "written": changed, "ok": True})
    else:
        click.echo(f"wrote {', '.join(changed)}" if changed else "nothing to do: every generated file is up to date")
    return 0
