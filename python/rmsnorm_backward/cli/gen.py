"""`rmsnorm-backward gen [--check]`: render every file op_def restates (scripts/codegen)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from .. import op_def
from ._common import CliError, print_json

HELP = "generate the op registration, op proto, op info, aclnn header and presets from op_def"
GENERATOR = op_def.REPO_ROOT / "scripts" / "codegen" / "generate.py"


def add_arguments(p) -> None:
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 naming every generated file that differs from op_def")
    p.add_argument("--op-def", type=Path, default=op_def.DEFAULT_PATH, metavar="TOML",
                   help="the operator definition (default: %(default)s)")
    p.add_argument("--root", type=Path, default=op_def.REPO_ROOT, metavar="DIR",
                   help="where the generated tree lives (default: the repository)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def load_generator():
    if not GENERATOR.is_file():
        raise CliError(f"the code generator {GENERATOR} is missing: gen runs from a source checkout")
    spec = importlib.util.spec_from_file_location("rmsnorm_backward_codegen", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def run(args) -> int:
    if not args.op_def.is_file():
        raise CliError(f"--op-def {args.op_def} is not a file")
    if not args.root.is_dir():
        raise CliError(f"--root {args.root} is not a directory")
    try:
        op = op_def.load(args.op_def)
    except (KeyError, ValueError) as e:  # tomllib.TOMLDecodeError is a ValueError
        raise CliError(f"--op-def {args.op_def} is not a valid operator definition ({e})") from None
    generator = load_generator()
    root = args.root.resolve()
    if args.check:
        stale = generator.stale(root, op)
        if args.json:
            print_json({"check": True, "stale": stale, "ok": not stale})
        elif stale:
            print(f"{len(stale)} generated file(s) differ from {args.op_def.name}: {', '.join(stale)}; "
                  f"run `rmsnorm-backward gen` (edit op_def or the templates, not the outputs)")
        else:
            print(f"all {len(generator.render_all(op))} generated files are up to date")
        return 1 if stale else 0
    changed = generator.write(root, op)
    if args.json:
        print_json({"check": False, "written": changed, "ok": True})
    else:
        print(f"wrote {', '.join(changed)}" if changed else "nothing to do: every generated file is up to date")
    return 0
