# SPDX-License-Identifier: BSD-3-Clause
"""RmsNormBackward's command line: golden (the precision check on the best backend), gen (code
generation from op_def), doctor (what is installed, which backends work), bench (modelled
performance per shape), report (PERFORMANCE.md from bench's JSON reports).

Shell completion (bash; zsh_source and fish_source for the others):

\b
    eval "$(_RMSNORM_BACKWARD_COMPLETE=bash_source rmsnorm-backward)"
"""
from __future__ import annotations

import signal
import sys
import threading

import click

from ..errors import RmsNormBackwardError
from ._common import CONTEXT, PROG, CliError, show_notices
from . import bench, doctor, gen, golden, report

COMMANDS = {"golden": golden.command, "gen": gen.command, "doctor": doctor.command, "bench": bench.command,
            "report": report.command}


@click.group(PROG, help=__doc__, context_settings=CONTEXT)
@click.version_option(package_name="rmsnorm-backward", prog_name=PROG)
def cli() -> None:
    show_notices()


for _name, _command in COMMANDS.items():
    cli.add_command(_command, _name)


# The signals that end a run: each becomes Interrupted where the program is, so every `finally` and
# `except BaseException` (the sample directory's clean-up) runs, as for Ctrl-C.
SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


class Interrupted(KeyboardInterrupt):
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _interrupt(signum, frame):
    for s in SIGNALS:  # the clean-up and the exit that follow are not interrupted again
        signal.signal(s, signal.SIG_IGN)
    raise Interrupted(signum)


def main(argv=None) -> int:
    """Runs the command line on `argv` (default sys.argv[1:]) and returns the exit status: 0, 1 when
    golden's precision check fails, 2 for a bad option, input file or environment, 128 + the signal
    (130 for Ctrl-C) when SIGINT, SIGTERM or SIGHUP interrupts it, having removed what it was writing.
    Run as the program (argv None), it ignores those signals once it is done, so the interpreter's
    shutdown prints no traceback; called with argv, it restores the caller's handlers."""
    owned = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, _interrupt) for s in SIGNALS} if owned else {}
    try:
        return _run(argv)
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_IGN if argv is None else handler)


def _run(argv) -> int:
    try:
        code = cli.main(args=argv, prog_name=PROG, standalone_mode=False)
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except RmsNormBackwardError as e:  # a rule of the operator or the twin, or the environment, found while running
        CliError(str(e)).show()
        return CliError.exit_code
    except OSError as e:  # a file or directory the system refused, that no check above named
        CliError(f"{e.filename or 'a file'} cannot be used ({e.strerror or e})").show()
        return CliError.exit_code
    except MemoryError:  # the host memory estimate fell short: still one sentence, not a traceback
        CliError("ran out of host memory; use smaller shapes").show()
        return CliError.exit_code
    except (click.Abort, KeyboardInterrupt) as e:  # click turns an interrupt into Abort, the signal its cause
        signum = next((c.signum for c in (e, e.__cause__, e.__context__) if isinstance(c, Interrupted)), None)
        if signum is None:
            click.echo(f"{PROG}: interrupted", err=True)
            return 130
        click.echo(f"{PROG}: interrupted ({signal.Signals(signum).name})", err=True)
        return 128 + signum
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
