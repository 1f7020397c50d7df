# SPDX-License-Identifier: BSD-3-Clause
"""docs/torch.md names every Hugging Face family the integrations patch, and no other."""
from __future__ import annotations

import importlib.util
import re
import sys

import pytest

from markdown_files import ROOT
from rmsnorm_backward import resources


def families() -> dict:
    """integrations/families.py's FAMILIES, loaded alone (the package around it imports torch)."""
    name = "docs_test_families"
    spec = importlib.util.spec_from_file_location(name, resources.package_dir() / "integrations" / "families.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module.FAMILIES


def test_families_named_are_the_integrations_families():
    if ROOT is None:
        pytest.skip("docs/ is in the source checkout")
    text = (ROOT / "docs" / "torch.md").read_text(encoding="utf-8")
    sentence = " ".join(text.split("Families:", 1)[1].split("Offset and eps", 1)[0].split())
    named = {re.sub(r"-", "_", word.lower()) for word in re.findall(r"\b([A-Z][A-Za-z]*(?:\d|-[A-Z][A-Za-z]*\d?)[\w-]*)",
                                                                    sentence)}
    named |= {word.lower() for word in re.findall(r"\b(Llama|Mistral|Gemma)\b", sentence)}
    assert named == set(families())
