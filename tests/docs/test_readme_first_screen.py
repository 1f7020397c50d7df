"""README.md is a user's page: short, and its first screen says what the operator is, how to install
it and how a training run uses it (the rest of the docs are linked from it, test_links.py)."""
from __future__ import annotations

import pytest

from markdown_files import ROOT

FIRST_SCREEN = 40  # lines
MOST_BYTES = 6 * 1024


@pytest.fixture
def readme() -> str:
    if ROOT is None:
        pytest.skip("the README is in the source checkout")
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_is_short(readme):
    assert len(readme.encode()) <= MOST_BYTES, "README.md holds the user's first page; details go to docs/"


def test_first_screen_shows_what_how_to_install_and_a_training_call(readme):
    screen = "\n".join(readme.splitlines()[:FIRST_SCREEN])
    assert "Ascend C custom operator" in screen and "backward pass of RMSNorm" in screen
    assert "./build.sh run" in screen and "pip install ." in screen
    assert "```python" in screen and "patch_model(" in screen and ".backward()" in screen.split("```python")[1]


def test_readme_links_every_room(readme):
    for room in ("docs/torch.md", "docs/cli.md", "docs/npu_build.md", "docs/design.md", "twin/README.md",
                 "framework/atb_plugin/README.md", "PERFORMANCE.md"):
        assert f"]({room}" in readme, room
