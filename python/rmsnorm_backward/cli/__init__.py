"""The `rmsnorm-backward` command: golden (precision check on the best backend), gen (code
generation from op_def), doctor (what is installed, which backends work), bench (modelled
performance per shape, see PERFORMANCE.md)."""
from __future__ import annotations

import sys

from ..errors import RmsNormBackwardError
from ._common import CliError, Parser
from . import bench, doctor, gen, golden

COMMANDS = {"golden": golden, "gen": gen, "doctor": doctor, "bench": bench}


def build_parser() -> Parser:
    parser = Parser(prog="rmsnorm-backward", description=__doc__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser, required=True)
    for name, module in COMMANDS.items():
        module.add_arguments(sub.add_parser(name, help=module.HELP, description=module.HELP))
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command].run(args)
    except (CliError, RmsNormBackwardError) as e:
        sys.stderr.write(f"rmsnorm-backward {args.command}: {e}\n")
        return 2
    except MemoryError:  # the preflight's estimate fell short: still one sentence, not a traceback
        sys.stderr.write(f"rmsnorm-backward {args.command}: ran out of host memory; use smaller shapes\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"rmsnorm-backward {args.command}: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
