# SPDX-License-Identifier: BSD-3-Clause
"""The kernel cache ($ASCENDC_TWIN_CACHE): a place it cannot use is the machine's fault, said in one
sentence as an EnvironmentSetupError naming the cache and the variable, never a bare OSError."""
from __future__ import annotations

import errno
import secrets
import shutil
from pathlib import Path

import numpy as np
import pytest

from ascendc_twin import build, run_kernel
from ascendc_twin.build import CACHE_VARIABLE, cache_dir, compile_kernel
from ascendc_twin.errors import EnvironmentSetupError

# An empty kernel `ktag`; each test renames it k<random tag>, so its object is new to the cache.
KERNEL = '#include "kernel_operator.h"\nextern "C" __global__ __aicore__ void ktag(GM_ADDR x) {}\n'


def one_sentence(error: Exception) -> str:
    text = str(error)
    assert "\n" not in text and text.count(". ") == 0 and CACHE_VARIABLE in text
    assert not isinstance(error, (NotADirectoryError, FileExistsError, PermissionError))
    return text


def test_the_cache_variable_naming_a_file_is_an_environment_error(tmp_path, monkeypatch):
    place = tmp_path / "a_file"
    place.write_text("not a directory")
    monkeypatch.setenv(CACHE_VARIABLE, str(place))
    with pytest.raises(EnvironmentSetupError) as caught:
        cache_dir()
    assert "a file stands where a directory is needed" in one_sentence(caught.value)
    assert str(place) in str(caught.value)


def test_a_cache_in_a_read_only_place_is_an_environment_error(read_only_dir, monkeypatch):
    monkeypatch.setenv(CACHE_VARIABLE, str(read_only_dir / "cache"))
    with pytest.raises(EnvironmentSetupError) as caught:
        cache_dir()
    assert "is not usable" in one_sentence(caught.value)


def test_a_full_disk_while_compiling_is_an_environment_error(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_VARIABLE, str(tmp_path / "cache"))
    tag = secrets.token_hex(4)
    source = tmp_path / f"k{tag}.cpp"
    source.write_text(KERNEL.replace("ktag", f"k{tag}"))

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(EnvironmentSetupError) as caught:
        compile_kernel(source, f"k{tag}", optimize=False)
    assert "the disk is full" in one_sentence(caught.value)
    assert not list((tmp_path / "cache" / "kernels").glob(f"k{tag}-*")), "no partial object or work directory left"


@pytest.mark.parametrize("code, reason", [(errno.ENOTDIR, "a file stands where a directory is needed"),
                                          (errno.EROFS, "read-only file system"), (errno.ENOSPC, "the disk is full"),
                                          (errno.EACCES, "not writable")])
def test_each_cause_is_named(code, reason):
    assert reason in one_sentence(build._cache_failure(Path("/c"), OSError(code, "x")))


# A kernel that computes (y = 2x + 1 on 8 floats by scalar GM accesses), so a recompiled object is
# seen to give the right answer, not only to load.
DOUBLING = ('#include "kernel_operator.h"\nextern "C" __global__ __aicore__ void ktag(GM_ADDR x, GM_ADDR y) {\n'
            '    AscendC::GlobalTensor<float> xg, yg;\n    xg.SetGlobalBuffer((__gm__ float *)x, 8);\n'
            '    yg.SetGlobalBuffer((__gm__ float *)y, 8);\n'
            '    for (int i = 0; i < 8; ++i) { yg.SetValue(i, 2.0f * xg.GetValue(i) + 1.0f); }\n}\n')
DAMAGES = {"truncated": lambda data: data[: len(data) // 2], "empty": lambda data: b"",
           "garbage": lambda data: bytes(range(256)) * (len(data) // 256)}


@pytest.fixture(scope="module")
def private_cache(tmp_path_factory):
    """A kernel cache of this module's own: the shared one is never damaged."""
    return tmp_path_factory.mktemp("cache")


def cached_doubling(folder: Path, source_dir: Path) -> tuple[Path, str, Path]:
    """The doubling kernel under a new name (so no launch process of this one has loaded its object
    yet: a new process, as far as the object is concerned), compiled into the cache `folder`."""
    tag = f"k{secrets.token_hex(4)}"
    source = source_dir / f"{tag}.cpp"
    source.write_text(DOUBLING.replace("ktag", tag))
    return source, tag, compile_kernel(source, tag, optimize=False)


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_cached_object_is_compiled_again_with_one_notice(private_cache, damage, tmp_path, monkeypatch,
                                                                   caplog, rng):
    monkeypatch.setenv(CACHE_VARIABLE, str(private_cache))
    source, tag, target = cached_doubling(private_cache, tmp_path)
    target.write_bytes(DAMAGES[damage](target.read_bytes()))
    monkeypatch.setattr(build, "_checked", {})  # as in a later process: nothing checked yet
    x = rng.standard_normal(8).astype(np.float32)
    y = np.zeros(8, np.float32)
    with caplog.at_level("WARNING", logger="ascendc_twin"):
        run_kernel(source, tag, [x, y], optimize=False)
    np.testing.assert_array_equal(y, 2 * x + 1)
    (notice,) = [r.getMessage() for r in caplog.records]
    assert f"damaged {target.name}" in notice and str(private_cache) in notice and CACHE_VARIABLE in notice
    assert build._elf_problem(target) is None
    assert (target.parent / f"{target.name}.sha256").read_text().strip() == build._sha256(target)


def test_changed_bytes_are_caught_by_the_digest_and_an_object_without_one_by_its_elf_headers(private_cache,
                                                                                          tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_VARIABLE, str(private_cache))
    _, _, target = cached_doubling(private_cache, tmp_path)
    data = target.read_bytes()
    copy = tmp_path / target.name
    digest = tmp_path / f"{target.name}.sha256"
    digest.write_bytes((target.parent / digest.name).read_bytes())
    copy.write_bytes(data[:4096] + bytes(b ^ 0xFF for b in data[4096:4160]) + data[4160:])
    assert build._damage(copy) == f"its bytes do not match {digest.name}"
    digest.unlink()  # cached before objects carried a digest: whole ELF headers and segments suffice
    assert build._damage(copy) is None
    copy.write_bytes(data[:-100])
    assert build._damage(copy).startswith("truncated")


def test_every_kernel_links_the_one_launcher_compiled_for_its_headers(tmp_path, monkeypatch, rng):
    """The launcher (launch_runtime.cpp) is compiled once per header set and flags, and is part of each
    kernel's key: a changed launcher source gives new kernel objects, never a stale link."""
    first = cached_doubling(cache_dir(), tmp_path)[2]
    launchers = set(cache_dir().glob("launch_runtime-*.o"))
    source, tag, second = cached_doubling(cache_dir(), tmp_path)
    assert first != second and set(cache_dir().glob("launch_runtime-*.o")) == launchers
    include = tmp_path / "include"
    shutil.copytree(build.twin_include_dirs()[0], include)
    launcher = include / build.RUNTIME_SOURCE
    launcher.write_text(launcher.read_text() + f"// launcher {secrets.token_hex(4)}\n")  # new to the cache
    monkeypatch.setattr(build, "twin_include_dirs", lambda: [include])
    monkeypatch.setattr(build, "precompiled_header", lambda *_: None)  # one per header copy: seconds each
    assert compile_kernel(source, tag, optimize=False) != second
    assert len(set(cache_dir().glob("launch_runtime-*.o")) - launchers) == 1
    x = rng.standard_normal(8).astype(np.float32)
    y = np.zeros(8, np.float32)
    run_kernel(source, tag, [x, y], optimize=False)
    np.testing.assert_array_equal(y, 2 * x + 1)


def test_a_define_the_twin_never_names_shares_the_launcher_one_it_names_does_not(tmp_path):
    source, tag, plain = cached_doubling(cache_dir(), tmp_path)
    launchers = set(cache_dir().glob("launch_runtime-*.o"))
    assert compile_kernel(source, tag, defines={"ONLY_THIS_KERNEL_READS_IT": 2}, optimize=False) != plain
    assert set(cache_dir().glob("launch_runtime-*.o")) == launchers
    twin = build.twin_include_dirs()
    assert build.runtime_defines({"ONLY_THIS_KERNEL_READS_IT": 2, "TWIN_ICPU_AUTO_SYNC": 0}, twin) == [
        "-DTWIN_ICPU_AUTO_SYNC=0"]  # tikicpulib.h reads it
    assert build.runtime_defines(["N=64", "T=float"], twin) == ["-DN=64", "-DT=float"]  # identifiers the twin uses
