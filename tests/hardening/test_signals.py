# SPDX-License-Identifier: BSD-3-Clause
"""SIGINT, SIGTERM and SIGHUP while `golden --save-dir D` writes its sample directory: the command
exits 128 + the signal with one line saying so, no traceback (not from the interpreter's shutdown
either), and nothing is left beside D: neither D nor its hidden work directory .D.xxxx.

Deterministic: the run is a child process whose sample writer sends the signal to its own process
at a chosen point of the save (the writer asks each file's dtype just before writing it; the last
point is case.json, written after every .bin), so the signal lands exactly there, not after a sleep."""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

# The child: the real CLI with the signal sent from inside the save, at file `at` (or at case.json).
CHILD = textwrap.dedent("""
    import os, signal, sys
    from rmsnorm_backward.cli import main, sample_dir

    sig, at = getattr(signal, sys.argv[1]), sys.argv[2]
    real_dtype, real_dumps, calls = sample_dir.numpy_dtype, sample_dir.json.dumps, []

    def dtype(name):
        if at != "case.json" and len(calls) == int(at):
            os.kill(os.getpid(), sig)
        calls.append(name)
        return real_dtype(name)

    class Json:
        @staticmethod
        def dumps(*args, **kwargs):
            if at == "case.json":
                os.kill(os.getpid(), sig)
            return real_dumps(*args, **kwargs)

    sample_dir.numpy_dtype = dtype
    sample_dir.json = Json
    sys.argv = ["rmsnorm-backward", *sys.argv[3:]]
    sys.exit(main())
""")


# Each signal before the first file and at case.json (every .bin written), SIGTERM mid-way too.
POINTS = [(name, at) for name in ("SIGINT", "SIGTERM", "SIGHUP") for at in ("0", "case.json")] + [("SIGTERM", "4")]


@pytest.mark.parametrize("name, at", POINTS)
def test_a_signal_during_the_save_leaves_nothing_and_no_traceback(tmp_path, name, at):
    d = tmp_path / "out" / "case"
    done = subprocess.run([sys.executable, "-c", CHILD, name, at, "golden", "--shape", "4,64", "--save-dir", str(d)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 128 + getattr(signal, name), done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"rmsnorm-backward: interrupted ({name})"
    assert list((tmp_path / "out").iterdir()) == [], "the interrupted save left files behind"
