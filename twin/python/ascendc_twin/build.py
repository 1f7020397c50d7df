# SPDX-License-Identifier: BSD-3-Clause
"""Compiling an Ascend C kernel source against the CPU twin, cached by content.

One shared object per (kernel source, entry): a generated wrapper includes `kernel_operator.h`, the
kernel source and `TWIN_DEFINE_LAUNCH(entry)` (twin/launch.h), linked with what every kernel runs
alike, the launcher and the L2 model (twin/launch_runtime.cpp, compiled once per header set, flags
and defines into the cache beside the precompiled header), so the twin ships as sources only and
every object has exactly one copy of its state. Objects are cached under `$ASCENDC_TWIN_CACHE`
(default `~/.cache/ascendc_twin`) by a hash of everything that can change the result, and
written by rename so parallel test workers never see half an object. Each object is checked before
it is loaded (dlopen maps it: a truncated one would end the process with SIGBUS): a whole ELF file
whose every header and segment lies inside it, and the SHA-256 written beside it (`<object>.sha256`)
after its compile completed. A damaged object (a full disk, an interrupted copy of the cache) is
compiled again, once, with a warning naming the cache and the variable.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import logging
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterable, Mapping, Optional, Union

from . import resources
from .errors import EnvironmentSetupError, InvalidInputError, KernelCompileError

CXX = "g++"
CACHE_VARIABLE = "ASCENDC_TWIN_CACHE"  # where compiled kernels are kept
# The kernel flags; never -ffast-math: NaN/Inf must propagate as IEEE does.
# The dynamic vectoriser cost model lets -O2 vectorise the twin's lane loops (GCC 12's default
# at -O2 leaves any loop needing an alias check scalar: 2x slower); IEEE results are unchanged.
# Hidden visibility keeps each object's twin state its own. A precompiled kernel_operator.h is
# built with exactly CODEGEN_FLAGS.
CODEGEN_FLAGS = ("-std=c++17", "-O2", "-fvect-cost-model=dynamic", "-fPIC", "-pthread", "-ffp-contract=off",
                 "-fvisibility=hidden")
# -z defs turns a missing definition into a compile error instead of a failed dlopen.
LINK_FLAGS = ("-shared", "-Wl,-z,defs")
PCH_KEEP = 4  # precompiled headers kept in the cache (each ~70 MB), the newest: two levels, two twins
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".inc", ".inl")
SKIPPED_DIRS = {"build", "node_modules", "__pycache__"}
_ENTRY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# A compile takes seconds (about 15 s for a kernel of a few thousand lines): announced at INFO, which the CLI shows.
_log = logging.getLogger(__name__)

Defines = Optional[Union[Mapping[str, object], Iterable[str]]]


def twin_include_dirs() -> list[Path]:
    """The twin's headers (its platform table included), from the checkout or the wheel (resources)."""
    return [resources.path("include")]  # EnvironmentSetupError when the install lacks them


_CACHE_REASONS = {errno.ENOTDIR: "a file stands where a directory is needed", errno.EEXIST: "a file stands where a directory is needed",
                  errno.EACCES: "it is not writable", errno.EPERM: "it is not writable",
                  errno.EROFS: "it is on a read-only file system", errno.ENOSPC: "the disk is full",
                  errno.EDQUOT: "the disk quota is used up"}


def _cache_failure(path: Path, error: OSError) -> EnvironmentSetupError:
    reason = _CACHE_REASONS.get(error.errno) or error.strerror or str(error)
    return EnvironmentSetupError(f"the twin's kernel cache {path} is not usable ({reason}): set {CACHE_VARIABLE} "
                                 "to a writable directory with free space")


@contextlib.contextmanager
def _writing_cache(path: Path):
    """Turns a failed write in the cache (read-only, full, a file in the way) into the one sentence of
    _cache_failure: this machine's fault, not the kernel's."""
    try:
        yield
    except OSError as e:
        raise _cache_failure(path, e) from None


def cache_dir() -> Path:
    """The directory of compiled kernels ($ASCENDC_TWIN_CACHE/kernels), created when missing;
    EnvironmentSetupError when it cannot be."""
    base = os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "ascendc_twin"
    path = Path(base) / "kernels"
    with _writing_cache(path):
        path.mkdir(parents=True, exist_ok=True)
    return path


@functools.lru_cache(maxsize=None)
def compiler_version() -> str:
    try:
        return subprocess.run([CXX, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise EnvironmentSetupError(f"{CXX} is needed to compile kernels for the twin and did not run ({exc})") from exc


def _define_flags(defines: Defines) -> list[str]:
    if defines is None:
        return []
    if isinstance(defines, Mapping):
        return [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in sorted(defines.items())]
    if isinstance(defines, str):
        raise InvalidInputError("defines must be a mapping or a list of NAME[=VALUE] strings, not one string")
    return [f"-D{d}" for d in defines]


def _headers(directory: Path) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in sorted(filenames):
            if name.endswith(HEADER_SUFFIXES):
                yield Path(dirpath) / name


def _wrapper(source: Path, name: str) -> str:
    quoted = str(source).replace("\\", "\\\\").replace('"', '\\"')
    return (f"// Generated by ascendc_twin: the launch wrapper of entry {name}\n"
            f'#include "kernel_operator.h"\n#include "{quoted}"\nTWIN_DEFINE_LAUNCH({name})\n')


def _digest(parts, dirs, *, where: bool = True) -> str:
    """A hash of `parts` and of every header under `dirs`. With where=False a header counts by its
    place inside its directory (the directory's rank and the relative path), so an identical tree
    elsewhere (another clone, another test's tmp directory) gives the same digest."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    for rank, directory in enumerate(dirs):
        for header in _headers(directory):
            name = str(header) if where else f"{rank}:{header.relative_to(directory)}"
            digest.update(name.encode() + b"\0" + header.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def _quoted_includes(source: Path, dirs: list[Path]) -> tuple[bool, list[Path]]:
    """The files `source` reaches through quoted includes that the header digest does not cover (a
    `sample.cpp` pulled in by an entry, a header outside `dirs`; followed into their own includes), and whether every file it
    reaches lies under `dirs` (then the key can name no directory). Looked up next to the including
    file, then in `dirs`, as g++ does."""
    inside, extra, seen, todo = True, [], {source}, [source]
    while todo:
        current = todo.pop()
        for included in _QUOTED_INCLUDE.findall(current.read_text(errors="replace")):
            found = next((c.resolve() for c in (current.parent / included, *(d / included for d in dirs))
                          if c.is_file()), None)
            if found is None or found in seen:
                continue
            seen.add(found)
            under = any(found.is_relative_to(d) for d in dirs)
            inside = inside and under
            if not (under and found.name.endswith(HEADER_SUFFIXES)):
                extra.append(found)
                todo.append(found)
    return inside, extra


def codegen_flags(optimize: bool = True) -> tuple[str, ...]:
    """CODEGEN_FLAGS, at -O0 when not `optimize`: a third less compile time and a slower twin, for
    small kernels run once. The results do not depend on it: -ffp-contract=off and no fast-math
    leave every float operation as written at either level."""
    return CODEGEN_FLAGS if optimize else tuple("-O0" if f == "-O2" else f for f in CODEGEN_FLAGS)


def _run(cmd) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


def precompiled_header(twin_dirs: list[Path], optimize: bool = True) -> Optional[Path]:
    """A directory with kernel_operator.h.gch and a link to the real header (found again when the
    kernel includes it itself), built once per twin header content: it saves the ~1 s of parsing
    the twin in every kernel compile. g++ ignores it where it does not fit (e.g. a -D that the
    twin's headers mention) and reads the link instead. None if it cannot be built."""
    cache = cache_dir()
    codegen = codegen_flags(optimize)
    pch = cache / f"pch-{_digest([compiler_version(), *codegen], twin_dirs)}"
    if (pch / "kernel_operator.h.gch").is_file():
        return pch
    header = twin_dirs[0] / "kernel_operator.h"
    with _writing_cache(cache):
        work = Path(tempfile.mkdtemp(prefix="tmp-pch-", dir=cache))
    done = _run([CXX, *codegen, *(f"-I{d}" for d in twin_dirs), "-x", "c++-header", str(header),
                 "-o", str(work / "kernel_operator.h.gch")])
    if done.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        return None
    (work / "kernel_operator.h").symlink_to(header)
    try:
        os.rename(work, pch)
    except OSError:  # another process built it first
        shutil.rmtree(work, ignore_errors=True)
    for old in sorted(cache.glob("pch-[0-9a-f]*"), key=lambda p: p.stat().st_mtime)[:-PCH_KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return pch


RUNTIME_SOURCE = Path("twin") / "launch_runtime.cpp"  # under the twin's include directory


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def twin_runtime_source() -> Path:
    """The twin's compiled-once source (the launcher and the L2 model's walk): a program that holds
    kernels and is built by a g++ command of its own (not compile_kernel) compiles it beside them."""
    return twin_include_dirs()[0] / RUNTIME_SOURCE


def runtime_defines(defines: Defines, twin_dirs: list[Path]) -> list[str]:
    """The -D flags of `defines` that the launcher's compile takes: those of macros the twin's
    headers or launcher spell anywhere (a macro it never names cannot change what it compiles to;
    one it names, even as a plain identifier, can)."""
    if not defines:
        return []
    files = [path for d in twin_dirs for path in _headers(d)] + [twin_dirs[0] / RUNTIME_SOURCE]
    words = {word for path in files for word in _WORD.findall(path.read_text(errors="replace"))}
    return [f for f in _define_flags(defines) if f[2:].split("=", 1)[0] in words]


def runtime_object(twin_dirs: list[Path], optimize: bool, defines: Defines, pch: Optional[Path]) -> Path:
    """The launcher (RUNTIME_SOURCE) compiled to an object, once per twin header set, flags and
    runtime_defines, cached by content like a kernel; every kernel object links it.
    KernelCompileError when it does not compile."""
    cache = cache_dir()
    source = twin_dirs[0] / RUNTIME_SOURCE
    flags = [*codegen_flags(optimize), *runtime_defines(defines, twin_dirs), *(f"-I{d}" for d in twin_dirs)]
    key = [compiler_version(), chr(0).join(flags[: len(flags) - len(twin_dirs)]), source.read_bytes()]
    target = cache / f"launch_runtime-{_digest(key, twin_dirs, where=False)}.o"
    if _usable(target):
        return target
    with _writing_cache(cache):
        work = Path(tempfile.mkdtemp(prefix="tmp-runtime-", dir=cache))
    try:
        _compile([CXX, *flags, "-c", str(source), "-o", str(work / "launch_runtime.o")], pch, cache,
                 f"the twin's launcher {source}")
        _publish(work / "launch_runtime.o", target, cache)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _compile(cmd: list, pch: Optional[Path], cache: Path, what: str) -> None:
    """Runs the g++ command `cmd`, with the precompiled header first (a real error comes again
    without it): a full disk is the cache's EnvironmentSetupError, any other failure a
    KernelCompileError naming `what`."""
    done = _run(cmd[:1] + [f"-I{pch}"] + cmd[1:]) if pch else None
    if done is None or done.returncode != 0:
        done = _run(cmd)
    if done.returncode != 0 and "No space left on device" in done.stderr:
        raise _cache_failure(cache, OSError(errno.ENOSPC, "No space left on device"))
    if done.returncode != 0:
        raise KernelCompileError(f"g++ could not compile {what}:\n{done.stderr.strip()}")


def _publish(built: Path, target: Path, cache: Path) -> None:
    """Moves `built` into the cache as `target`, the digest of its bytes first: an object is never in
    place without it."""
    digest = built.with_name(built.name + DIGEST_SUFFIX)
    with _writing_cache(cache):
        digest.write_text(_sha256(built) + "\n")
        os.replace(digest, target.with_name(target.name + DIGEST_SUFFIX))
        os.replace(built, target)


DIGEST_SUFFIX = ".sha256"  # beside each cached object: the SHA-256 of its bytes
# Objects checked by this process, with the (inode, size, mtime) they had then: checked once.
_checked: dict = {}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _elf_problem(path: Path) -> Optional[str]:
    """Why `path` is not a whole 64-bit little-endian ELF file (its program and section headers and
    every segment's bytes inside it), or None."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 64:
        return f"{len(data)} bytes, shorter than an ELF header"
    if data[:6] != b"\x7fELF\x02\x01":
        return "no 64-bit little-endian ELF header"
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    if phoff + phnum * phentsize > len(data) or shoff + shnum * shentsize > len(data):
        return f"truncated: its headers end past its {len(data)} bytes"
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and p_offset + p_filesz > len(data):  # PT_LOAD: what dlopen maps
            return f"truncated: a segment ends past its {len(data)} bytes"
    return None


def _damage(target: Path) -> Optional[str]:
    """Why the cached object `target` must not be loaded, or None (checked once per process and
    file). An object cached without a digest file is checked as an ELF file only."""
    try:
        st = target.stat()
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if _checked.get(target) == stamp:
            return None
        problem = _elf_problem(target)
        if problem is None:
            digest = target.with_name(target.name + DIGEST_SUFFIX)
            want = digest.read_text().strip() if digest.exists() else None
            if want is not None and want != _sha256(target):
                problem = f"its bytes do not match {digest.name}"
    except OSError as e:
        problem = f"it cannot be read ({e.strerror or e})"
    if problem is None:
        _checked[target] = stamp
    return problem


def _usable(target: Path) -> bool:
    """True when the cached object `target` can be loaded; a damaged one is removed, with a notice."""
    if not target.is_file():
        return False
    problem = _damage(target)
    if problem is None:
        return True
    _recompile_notice(target, problem)
    return False


def _recompile_notice(target: Path, problem: str) -> None:
    _log.warning("the twin's kernel cache holds a damaged %s (%s); compiling it again (the cache is %s, "
                 "set by %s)", target.name, problem, target.parent.parent, CACHE_VARIABLE)
    for path in (target, target.with_name(target.name + DIGEST_SUFFIX)):
        with contextlib.suppress(OSError):
            path.unlink()


def compile_kernel(source: Union[str, os.PathLike], name: str, *, defines: Defines = None,
                   include_dirs: Optional[Iterable[Union[str, os.PathLike]]] = None, optimize: bool = True) -> Path:
    """Compile `source` with entry `name` against the twin; the cached shared object's path.
    optimize=False compiles at -O0 (codegen_flags)."""
    source = Path(source).resolve()
    if not source.is_file():
        raise InvalidInputError(f"source must be an existing kernel source file (got {source})")
    if not isinstance(name, str) or not _ENTRY_NAME.match(name):
        raise InvalidInputError(f"name must be the C identifier of the kernel entry (got {name!r})")
    twin_dirs = twin_include_dirs()
    dirs = twin_dirs + [source.parent] + [Path(d).resolve() for d in include_dirs or ()]
    cxxflags = [*codegen_flags(optimize), *LINK_FLAGS]
    flags = cxxflags + _define_flags(defines) + [f"-I{d}" for d in dirs]
    wrapper = _wrapper(source, name)
    cache = cache_dir()
    # The key names no directory when every file the source includes lies under `dirs` (the twin
    # reports no file names, so the object depends on contents only): identical kernels in different
    # places, e.g. another clone or a test's tmp directory, share one object.
    inside, extra = _quoted_includes(source, dirs)
    included = [part for path in extra for part in (path.name, path.read_bytes())]
    included.append((twin_dirs[0] / RUNTIME_SOURCE).read_bytes())  # linked into the object
    if inside:
        key = [compiler_version(), chr(0).join(cxxflags + _define_flags(defines)), str(len(dirs)),
               _wrapper(Path(source.name), name), source.read_bytes(), *included]
        target = cache / f"{name}-{_digest(key, dirs, where=False)}.so"
    else:
        key = [compiler_version(), chr(0).join(flags), wrapper, source.read_bytes(), *included]
        target = cache / f"{name}-{_digest(key, dirs)}.so"
    if _usable(target):
        return target

    _log.info("compiling %s for the twin, once per source change...", source.name)
    started = time.monotonic()
    with _writing_cache(cache):
        work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=cache))
    try:
        with _writing_cache(cache):
            (work / "wrapper.cpp").write_text(wrapper)
        pch = precompiled_header(twin_dirs, optimize)
        launcher = runtime_object(twin_dirs, optimize, defines, pch)
        _compile([CXX, *flags, str(work / "wrapper.cpp"), str(launcher), "-o", str(work / "kernel.so")], pch, cache,
                 f"{source} (entry {name})")
        problem = _elf_problem(work / "kernel.so")
        if problem is not None:
            raise EnvironmentSetupError(f"{CXX} wrote a damaged object for {source.name} ({problem}) in the twin's "
                                        f"kernel cache {cache}: set {CACHE_VARIABLE} to a directory with free space")
        _publish(work / "kernel.so", target, cache)
        _log.info("compiled %s in %.1f s", source.name, time.monotonic() - started)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target
