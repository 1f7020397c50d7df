# SPDX-License-Identifier: BSD-3-Clause
"""Writing files so that a reader never sees half of one: a temporary sibling, then a rename.

`write_atomic` for one file; `atomic_directory` for a directory of them (a sample directory): it is
filled under a hidden sibling name and renamed into place only when the block finishes, so an error
or Ctrl-C leaves nothing behind.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Union


def write_atomic(path: Union[str, os.PathLike], data: Union[bytes, str]) -> None:
    """Write `data` (str as UTF-8) through a temporary file in the same directory, then rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable_dir(directory: Union[str, os.PathLike]) -> None:
    """OSError now, before any work, when no file can be created in `directory` or in the nearest of
    its parents that exists (mkdir would make the rest). Tried with a real temporary file: permission
    bits say nothing for root, and nothing about read-only mounts."""
    directory = Path(directory).absolute()
    while not directory.exists():
        directory = directory.parent
    if not directory.is_dir():
        raise NotADirectoryError(20, "Not a directory", str(directory))
    try:
        tempfile.TemporaryFile(dir=directory).close()
    except OSError as e:
        raise type(e)(e.errno, e.strerror, str(directory)) from None


@contextlib.contextmanager
def atomic_directory(path: Union[str, os.PathLike]) -> Iterator[Path]:
    """Yields a temporary sibling of `path` to fill; renames it to `path` when the block ends, and
    removes it instead when the block raises (KeyboardInterrupt included). `path` must not exist or
    be an empty directory: a directory with contents is never replaced (FileExistsError)."""
    path = Path(path).absolute()
    if path.exists() and not (path.is_dir() and not any(path.iterdir())):
        raise FileExistsError(17, "File exists and is not an empty directory", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        yield work
        os.chmod(work, 0o755)
        if path.is_dir():
            path.rmdir()  # empty (checked above); a rename onto it would need it gone
        os.rename(work, path)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
