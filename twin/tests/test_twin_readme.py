# SPDX-License-Identifier: BSD-3-Clause
"""The README's Python snippets run as written: each ```python block is executed in a fresh
interpreter, outside the source directory."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from ascendc_twin import resources

README = resources.checkout() / "README.md" if resources.checkout() else None
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def snippets() -> list[str]:
    return BLOCK.findall(README.read_text()) if README else []


def test_the_readme_has_its_snippet():
    if README is None:
        pytest.skip("the README is in the source directory")
    assert len(snippets()) >= 1  # run_kernel on the demo


@pytest.mark.parametrize("code", snippets(), ids=lambda code: code.splitlines()[0])
def test_readme_snippet_runs_as_written(code, tmp_path):
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "every snippet shows its result"
    assert list(tmp_path.iterdir()) == []  # and leaves nothing behind
