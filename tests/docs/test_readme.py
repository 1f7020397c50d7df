# SPDX-License-Identifier: BSD-3-Clause
"""README.md is a user's page: short, its first screen says what the operator is, how to install it and
how a training run uses it, its support table says what op_def says, its parameter table and
constraints are rendered from op_def (CANN's operator README form), and it links every room of the
docs (whose links test_links.py resolves)."""
from __future__ import annotations

import pytest

from markdown_files import ROOT
from rmsnorm_backward import op_def

FIRST_SCREEN = 40  # lines
MOST_BYTES = 8 * 1024


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


def test_support_table_says_what_op_def_says(readme):
    section = readme.split("## What it supports", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    op = op_def.load()
    for soc, chip in op.soc_chips.items():
        assert f"`{soc}`, built for `{chip}`" in table, soc
    assert set(op.socs) == set(op.soc_chips)
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    assert all(t.short in rows["dtypes"] for t in op.type_values)
    mixed = sorted(m["T"].short for m in op.mixed if m["gamma"].short == "fp32")
    assert len(mixed) == len(op.mixed) and f"fp32 beside {'/'.join(mixed)} x" in rows["dtypes"]
    optional = {t.name for t in op.inputs if t.optional}
    assert optional == {"gamma", "dres"} and [a.name for a in op.attrs] == ["gamma_offset"]
    assert all(form in rows["forms"] for form in ("no gamma", "`dres`", "`gamma_offset`"))


def test_the_parameter_table_is_rendered_from_op_def(readme):
    from rmsnorm_backward.codegen import generate

    op = op_def.load()
    assert "README.md" not in generate.stale(ROOT, op), "run `rmsnorm-backward gen`"
    section = readme.split("## Parameters and constraints", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip().strip("`"): [c.strip() for c in line.split("|")[2:-1]]
            for line in section.splitlines() if line.startswith("| `")}
    assert list(rows) == [t.name for t in op.inputs] + [a.name for a in op.attrs] + [t.name for t in op.outputs]
    for t in op.tensors:
        kind, meaning, dtypes, formats = rows[t.name]
        assert kind.startswith("input" if t in op.inputs else "output") and ("optional" in kind) == t.optional
        assert meaning == t.doc and dtypes.split(", ") == list(dict.fromkeys(d.name for d in t.dtypes))
        assert formats == ", ".join(op.formats)
    for a in op.attrs:
        assert rows[a.name][0] == f"attribute ({a.type}, default {a.literal})" and rows[a.name][1] == a.doc
        rule = section.split(f"- `{a.name}`: ", 1)[1].split("\n", 1)[0]
        assert ("finite" in rule) == a.finite and (f"without {a.needs}" in rule) == (a.needs is not None)
