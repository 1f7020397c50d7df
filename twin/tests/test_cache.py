# SPDX-License-Identifier: BSD-3-Clause
"""The kernel cache ($ASCENDC_TWIN_CACHE): a place it cannot use is the machine's fault, said in one
sentence as an EnvironmentSetupError naming the cache and the variable, never a bare OSError."""
from __future__ import annotations

import errno
import secrets
from pathlib import Path

import pytest

from ascendc_twin import build
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
