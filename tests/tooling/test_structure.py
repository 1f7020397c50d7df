# SPDX-License-Identifier: BSD-3-Clause
"""The package's structure as its code draws it: no import cycle among the modules of rmsnorm_backward
(counting imports inside functions too), and the twin reached only through its public API."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from rmsnorm_backward import resources

PACKAGE = resources.package_dir()
TESTS = Path(__file__).resolve().parents[1]


def module_name(path: Path) -> str:
    parts = ("rmsnorm_backward", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that module `name` imports anywhere in its text."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names}
    return {m for m in found if m in known and m != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_the_package_has_no_import_cycle():
    found = modules()
    graph = {name: imports(name, path, set(found)) for name, path in found.items()}
    assert "rmsnorm_backward.simulate" in graph["rmsnorm_backward.backends"]
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_through_a_lazy_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


# The twin's public API: the names of its __all__ and the modules its README documents.
TWIN_MODULES = {"errors", "testing", "resources", "cann_ut"}


def twin_uses(path: Path) -> list[str]:
    """What a file takes from ascendc_twin: 'name' for a package-level name, 'module' or
    'module.name' for a submodule, '*' for a star import."""
    used = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "ascendc_twin":
            sub = node.module.partition(".")[2]
            used += [f"{sub}.{a.name}" if sub else a.name for a in node.names]
        elif isinstance(node, ast.Import):
            used += [a.name.partition(".")[2] for a in node.names if a.name.startswith("ascendc_twin.")]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "ascendc_twin"):
            used.append(node.attr)
    return used


def private_uses(used: list[str]) -> list[str]:
    import ascendc_twin

    return [u for u in used if u not in ascendc_twin.__all__ and u.split(".")[0] not in TWIN_MODULES or "._" in u
            or u.startswith("_")]


@pytest.mark.parametrize("root", [PACKAGE, TESTS], ids=["package", "tests"])
def test_the_operator_reaches_the_twin_only_through_its_public_api(root):
    used = {str(p.relative_to(root)): bad for p in sorted(root.rglob("*.py")) if p != Path(__file__).resolve()
            if (bad := private_uses(twin_uses(p)))}
    assert used == {}


def test_only_the_twin_backend_imports_the_twin():
    """rmsnorm_backward.twin is the operator's one door to ascendc_twin (it translates the errors)."""
    importers = sorted(module_name(p) for p in PACKAGE.rglob("*.py") if twin_uses(p))
    assert importers == ["rmsnorm_backward.twin"]


def test_the_twins_readme_documents_its_public_api():
    import ascendc_twin

    if resources.checkout() is None:
        pytest.skip("the README is in the source checkout")
    readme = (resources.checkout() / "twin" / "README.md").read_text()
    assert [name for name in [*ascendc_twin.__all__, *TWIN_MODULES] if f"`{name}" not in readme
            and f".{name}`" not in readme and f"{name}(" not in readme] == []


@pytest.mark.parametrize("line", ["from ascendc_twin import _twin", "import ascendc_twin._twin as t",
                                  "from ascendc_twin.build import _digest", "from ascendc_twin.model import Model",
                                  "import ascendc_twin\nascendc_twin._model_values('x', {})"])
def test_the_private_use_scan_finds(line, tmp_path):
    path = tmp_path / "a.py"
    path.write_text(line + "\n")
    assert private_uses(twin_uses(path))


def test_no_test_module_name_is_in_both_test_trees():
    """tests/ and twin/tests run in one pytest session, where a test module is imported by its name."""
    if resources.checkout() is None:
        pytest.skip("the test trees are in the source checkout")
    twin_tests = resources.checkout() / "twin" / "tests"
    names = [p.name for root in (TESTS, twin_tests) for p in root.rglob("*.py") if p.name != "conftest.py"]
    assert "test_run_kernel.py" in names and "test_golden_grid.py" in names
    assert {n for n in names if names.count(n) > 1} == set()


def test_op_host_includes_point_one_way():
    """No header of op_host includes a header whose source (the .cpp beside it) includes it back."""
    if resources.checkout() is None:
        pytest.skip("op_host is in the source checkout")
    op_host = resources.checkout() / "op_host"
    quoted = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)

    def includes(path: Path) -> set[Path]:
        return {(path.parent / name).resolve() for name in quoted.findall(path.read_text())}

    back = []
    for header in op_host.rglob("*.h"):
        for included in includes(header):
            source = included.with_suffix(".cpp")
            if source.is_file() and header.resolve() in includes(source):
                back.append(f"{header.relative_to(op_host)} -> {included.name}")
    assert back == []
