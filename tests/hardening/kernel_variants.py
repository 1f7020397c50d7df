# SPDX-License-Identifier: BSD-3-Clause
"""Changed copies of the kernel (op_kernel/) for the tests that plant a bug or take a sync out: written
once into the kernel cache, in a directory named by their content, never into the tree."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import rmsnorm_backward.simulate as simulate_module
from ascendc_twin import cache_dir

KERNEL_DIR = simulate_module.KERNEL_SOURCE.parent
ENTRY = simulate_module.KERNEL_SOURCE.name


def kernel_copy(kind: str, files: dict[str, str]) -> Path:
    """The kernel entry of a changed copy of op_kernel/ (file name -> text), written once into a
    directory of the cache named by its content (never in the tree)."""
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    directory = cache_dir().parent / kind / digest
    if not (directory / ENTRY).is_file():
        work = directory.with_name(digest + ".tmp")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        for file, content in files.items():
            (work / file).write_text(content)
        shutil.rmtree(directory, ignore_errors=True)
        work.rename(directory)
    return directory / ENTRY
