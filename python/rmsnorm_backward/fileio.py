# SPDX-License-Identifier: BSD-3-Clause
"""Writing files so that a reader never sees half of one, and nothing but a regular file is replaced.

`write_output` for an output option: a regular file or a new path is written atomically (a temporary
sibling, then a rename); a symlink is followed to its target, written atomically there; `-`, a FIFO,
a character device (a terminal, /dev/null) or an open descriptor (/dev/stdout, /dev/fd/N, whatever
it is open on) is opened and written in place, as a shell's `>` would; anything else (a directory, a socket, a block device) is refused with an OSError naming
the path. `write_atomic` for a file that must be a regular one; `atomic_directory` for a directory of
them (a sample directory): it is filled under a hidden sibling name and renamed into place only when
the block finishes, so an error or Ctrl-C leaves nothing behind.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Optional, Union


STDOUT = "-"  # an output path meaning standard output


def file_kind(mode: int) -> str:
    kinds = {stat.S_ISDIR: "a directory", stat.S_ISFIFO: "a FIFO", stat.S_ISSOCK: "a socket",
             stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device"}
    return next((kind for test, kind in kinds.items() if test(mode)), "not a regular file")


def output_kind(path: Union[str, os.PathLike]) -> tuple[str, Path]:
    """How write_output writes `path`: ("atomic", the file to replace: a symlink's target) or ("in
    place", path) for `-`, a FIFO or a character device; OSError naming `path` for anything else."""
    if str(path) == STDOUT or names_a_descriptor(Path(path)):
        return "in place", Path(path)
    path = followed(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "atomic", path
    if stat.S_ISREG(mode):
        return "atomic", path
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return "in place", path
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "Is a directory", str(path))
    raise OSError(0, f"it is {file_kind(mode)}, not a regular file, FIFO or character device", str(path))


_DESCRIPTOR = re.compile(r"/(?:proc/([^/]+)|dev)/fd/(\d+)")


def _descriptor_link(path: Path) -> Optional[re.Match]:
    """The match of _DESCRIPTOR on `path` or a link it passes through (/dev/stdout links to
    /proc/self/fd/1), or None."""
    link, seen = path, set()
    while True:
        found = _DESCRIPTOR.match(os.path.normpath(link.absolute()))
        if found or not link.is_symlink() or link in seen:
            return found
        seen.add(link)
        link = link.parent / os.readlink(link)


def names_a_descriptor(path: Union[str, os.PathLike]) -> bool:
    """Whether `path` names an open descriptor (under /dev/fd or /proc/<pid>/fd, as /dev/stdout does),
    perhaps onto a regular file the shell truncated for `>`: only writing through that descriptor
    keeps it right."""
    return _descriptor_link(Path(path)) is not None


def _own_descriptor(path: Path) -> Optional[int]:
    """The number of this process's descriptor that `path` names, or None."""
    found = _descriptor_link(path)
    if found is None or found.group(1) not in (None, "self", str(os.getpid())):
        return None
    return int(found.group(2))


def followed(path: Union[str, os.PathLike]) -> Path:
    """`path`, or for a symlink the path it names, existing or not (followed through further links);
    OSError naming `path` for a loop."""
    link = Path(path)
    seen = set()
    while link.is_symlink():
        if link in seen:
            raise OSError(40, "Too many levels of symbolic links", str(path))
        seen.add(link)
        link = link.parent / os.readlink(link)
    return link


def write_output(path: Union[str, os.PathLike], data: Union[bytes, str]) -> None:
    """Write `data` (str as UTF-8) to an output path as the module docstring says."""
    how, target = output_kind(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if how == "atomic":
        write_atomic(target, raw)
    elif str(target) == STDOUT or _own_descriptor(target) == 1:  # through sys.stdout: one offset, in order
        sys.stdout.flush()
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
    elif _own_descriptor(target) is not None:  # the descriptor itself, sharing its offset
        with open(_own_descriptor(target), "wb", closefd=False) as f:
            f.write(raw)
    else:
        with open(target, "wb") as f:
            f.write(raw)


def write_atomic(path: Union[str, os.PathLike], data: Union[bytes, str]) -> None:
    """Write `data` (str as UTF-8) through a temporary file in the same directory, then rename. A
    symlink is followed (its target is replaced, the link kept); a path that exists and is not a
    regular file is never replaced: OSError naming it."""
    how, path = output_kind(path)
    if how != "atomic":
        raise OSError(0, "it is not a regular file, so it is not replaced", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o644)
        try:
            os.replace(tmp, path)
        except OSError as e:  # named as the output, not the temporary file
            raise type(e)(e.errno, e.strerror, str(path)) from None
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
    be an empty directory: a directory with contents is never replaced (FileExistsError). A symlink
    is followed: the directory is made where it points, the link kept."""
    path = followed(Path(path).absolute())
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
