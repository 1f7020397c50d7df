"""RmsNormBackward's command line: golden (the precision check on the best backend), gen (code
generation from op_def), doctor (what is installed, which backends work), bench (modelled
performance per shape, see PERFORMANCE.md).

Shell completion (bash; zsh_source and fish_source for the others):

\b
    eval "$(_RMSNORM_BACKWARD_COMPLETE=bash_source rmsnorm-backward)"
"""
from __future__ import annotations

import sys

import click

from ..errors import TwinError
from ._common import CONTEXT, PROG, CliError, show_notices
from . import bench, doctor, gen, golden

COMMANDS = {"golden": golden.command, "gen": gen.command, "doctor": doctor.command, "bench": bench.command}


@click.group(PROG, help=__doc__, context_settings=CONTEXT)
@click.version_option(package_name="rmsnorm-backward", prog_name=PROG)
def cli() -> None:
    show_notices()


for _name, _command in COMMANDS.items():
    cli.add_command(_command, _name)


def main(argv=None) -> int:
    """Runs the command line on `argv` (default sys.argv[1:]) and returns the exit status: 0, 1 when
    golden's precision check fails, 2 for a bad option or environment, 130 when interrupted."""
    try:
        code = cli.main(args=argv, prog_name=PROG, standalone_mode=False)
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except TwinError as e:  # a rule of the operator or the twin, or the environment, found while running
        CliError(str(e)).show()
        return CliError.exit_code
    except MemoryError:  # the preflight's estimate fell short: still one sentence, not a traceback
        CliError("ran out of host memory; use smaller shapes").show()
        return CliError.exit_code
    except (click.Abort, KeyboardInterrupt):
        click.echo(f"{PROG}: interrupted", err=True)
        return 130
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
