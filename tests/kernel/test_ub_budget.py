# SPDX-License-Identifier: BSD-3-Clause
"""The UB budget tables in the kernel headers against the code: each path's table, evaluated on the
tiling of a shape, must give the UB the host tiling reports for that launch (layout::LaunchUbBytes, the
sum the tilers fit) and the most UB the kernel's InitBuffer calls held on the twin, on every core.

A table is a comment block opening with "UB budget:", its names defined as "X = field" (a tiling
field, or sizeof(T)) and "where X = <expression>" lines, then rows "| buffer | buffers | bytes each |"
whose two last cells are Python expressions; up(a, b) rounds a up to a multiple of b, cdiv(a, b)
divides rounding up. Every buffer takes its bytes rounded up to 32.
"""
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernel_cases import LAYOUT_CASES, run_and_check
from operator_inputs import make_inputs
from rmsnorm_backward import resources

KERNEL_DIR = Path(resources.path("op_kernel"))
HEADERS = {"rows_in_ub": "rows_in_ub", "small_cols": "small_cols", "long_rows": "long_rows",
           "long_rows_streamed": "long_rows_streamed", "dgamma": "dgamma"}
ELEMENT_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def up(a, b):
    return -(-a // b) * b


def cdiv(a, b):
    return -(-a // b)


@dataclass
class Table:
    header: str
    names: dict      # name -> tiling field, or "sizeof(T)"
    derived: list    # (name, expression), in order
    rows: list       # (buffer, count expression, bytes expression)

    def bytes(self, fields: dict, elem_bytes: int) -> int:
        scope = {"up": up, "cdiv": cdiv}
        for name, field in self.names.items():
            scope[name] = elem_bytes if field == "sizeof(T)" else fields[field]
        for name, expression in self.derived:
            scope[name] = eval(expression, {}, scope)
        total = 0
        for buffer, count, size in self.rows:
            n, each = int(eval(count, {}, scope)), int(eval(size, {}, scope))
            assert n >= 0 and each >= 0, f"{self.header}: row {buffer!r} evaluates to {n} x {each}"
            total += n * up(each, 32)
        return total


def parse(header: str) -> Table:
    lines = [line[2:].strip() for line in (KERNEL_DIR / f"rms_norm_backward_{header}.h").read_text().splitlines()
             if line.startswith("//")]
    start = next(i for i, line in enumerate(lines) if line.startswith("UB budget:"))
    block = []
    for line in lines[start:]:
        if not line:
            break
        block.append(line)
    names, derived, rows = {}, [], []
    for line in block:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            assert len(cells) == 3, f"{header}: a budget row has three cells: {line!r}"
            if cells[1] != "buffers":
                rows.append(tuple(cells))
        elif line.startswith("where "):
            name, expression = re.match(r"where (\w+) = (.+?)(?:\s{2,}\(.*\))?$", line).groups()
            derived.append((name, expression))
        else:
            names.update(re.findall(r"\b(\w+) = (sizeof\(T\)|[a-z_]+\b)", line))
    assert rows, f"{header}: no budget rows"
    return Table(header, names, derived, rows)


TABLES = {path: parse(header) for path, header in HEADERS.items()}


def launch_budget(path, fields, elem_bytes) -> int:
    main = TABLES[path].bytes(fields, elem_bytes)
    reduce = TABLES["dgamma"].bytes(fields, elem_bytes) if fields["groups"] > 1 else 0
    return max(main, reduce)




@pytest.mark.parametrize("path,dtype,shape", LAYOUT_CASES)
def test_budget_table_matches_the_tiling_and_the_kernel(rng, path, dtype, shape):
    _, _, stats = run_and_check(*make_inputs(rng, shape, dtype=dtype))
    assert stats["path"] == path
    assert_budget(stats, stats["path"], dtype, shape)


@pytest.mark.parametrize("path,dtype,shape", LAYOUT_CASES)
def test_budget_table_with_dres(rng, path, dtype, shape):
    """With dres each path holds its queue too (the path itself may change: less UB is left)."""
    dy, x, rstd, gamma = make_inputs(rng, shape, dtype=dtype)
    _, _, stats = run_and_check(dy, x, rstd, gamma, dres=rng.standard_normal(shape).astype(x.dtype))
    assert stats["tiling"]["has_dres"] == 1
    assert_budget(stats, stats["path"], dtype, shape)


def assert_budget(stats, path, dtype, shape):
    budget = launch_budget(path, stats["tiling"], ELEMENT_BYTES[dtype])
    assert budget == stats["ub_bytes"], f"{path} {dtype} {shape}: table {budget}, tiling {stats['ub_bytes']}"
    peaks = {core["ub_peak_bytes"] for core in stats["cores"]}
    assert peaks == {budget}, f"{path} {dtype} {shape}: table {budget}, kernel held {sorted(peaks)}"


def test_the_cases_cover_every_layout():
    """The LAYOUT_CASES above reach each store of long rows and each streamed variant (checked on the tiling)."""
    from rmsnorm_backward import _tiling

    seen = set()
    for path, dtype, (rows, cols) in LAYOUT_CASES:
        f = _tiling.compute_tiling([rows, cols], [rows, cols], [rows, 1], [cols], dtype, dtype, "float32", dtype)["fields"]
        if path == "long_rows":
            seen.add("ring" if f["row_buffers"] == 1 else "row buffers")
            seen.add("dx over dy" if f["dx_over_dy"] else "dx queue")
            seen.add("long rows, dgamma in GM" if f["dgamma_ub_cols"] < cols else "long rows, dgamma whole")
        if path == "long_rows_streamed":
            seen.add("gamma slots" if f["gamma_slots"] else "gamma whole")
            seen.add("dgamma partial" if f["dgamma_ub_cols"] < cols else "dgamma whole")
        if f["groups"] > 1:
            seen.add("row groups")
    assert seen == {"ring", "row buffers", "dx over dy", "dx queue", "gamma slots", "gamma whole", "dgamma partial",
                    "dgamma whole", "row groups", "long rows, dgamma in GM", "long rows, dgamma whole"}


def test_a_wrong_table_row_is_caught():
    """The check can fail: a table with one buffer dropped disagrees with the tiling's sum."""
    from rmsnorm_backward import _tiling

    rows, cols = 48, 1000
    result = _tiling.compute_tiling([rows, cols], [rows, cols], [rows, 1], [cols], "float32", "float32", "float32",
                                  "float32")
    table = TABLES["rows_in_ub"]
    short = Table(table.header, table.names, table.derived, table.rows[:-1])
    assert table.bytes(result["fields"], 4) == result["ub_bytes"]
    assert short.bytes(result["fields"], 4) == result["ub_bytes"] - 32
