# SPDX-License-Identifier: BSD-3-Clause
"""The CPU extensions built once per test run: a build directory of the cpu preset (`cmake --preset cpu`,
with Ninja as pip's builds use) that pytest-xdist's workers share under a file lock. The cpu-preset
test reads it and the wheel test builds its wheel in it, so the extensions' objects compile once."""
from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from pathlib import Path


@contextlib.contextmanager
def locked(build: Path):
    """Holds the build directory's lock: one process builds in it at a time."""
    with open(build.with_name(build.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build_once(root: Path, build: Path) -> Path:
    """Configures and builds the cpu preset of `root` in `build` unless a process of this run did;
    AssertionError naming the step that failed."""
    with locked(build):
        if not (build / "built").is_file():
            env = {**os.environ, "CMAKE_GENERATOR": "Ninja"}
            for step in (["cmake", "--preset", "cpu", "-S", root, "-B", build], ["cmake", "--build", build, "-j2"]):
                done = subprocess.run([str(part) for part in step], capture_output=True, text=True, env=env,
                                      timeout=900)
                assert done.returncode == 0, f"{' '.join(map(str, step))}: " + done.stdout[-3000:] + done.stderr[-3000:]
            (build / "built").write_text("")
    return build
