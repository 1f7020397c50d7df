# SPDX-License-Identifier: BSD-3-Clause
"""The tiling-decision snapshot: a fixed grid of shapes and the plain tiling's decision for each
(path, key, block dim, workspace, every tiling field by name), recorded before a refactor so that
tests/kernel/test_tiling_snapshot.py can prove the decisions did not change.

    python tests/kernel/tiling_snapshot.py    rewrites tiling_snapshot.jsonl from the current tiling

The file is JSON Lines, one line a case, so a re-recording shows as a diff of the cases it changed:
its first line names the tiling fields, every other line is one case (rows, cols, dtype, soc, block
dim cap, path, key, block dim, workspace, user workspace, min bytes, [the fields' values]).

Rewrite it only when a decision is meant to change, and say so in the commit.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

SNAPSHOT = Path(__file__).with_name("tiling_snapshot.jsonl")
DTYPES = ("float16", "float32", "bfloat16")

# Widths: tiny and odd ones, around every power of two a repeat or block works with, LLM hidden
# sizes, huge rows, and both sides of each boundary the tiling had when the snapshot was taken:
# small cols -> rows in UB (817 16-bit, 577 fp32), rows in UB -> long rows (2433 16-bit, 4081 with
# 16-bit rows row by row, 3129), long rows -> streamed (16897, 10385), and where the long-rows layout
# changes (its configuration table's rows).
_EDGES = [817, 577, 2433, 4081, 3129, 16897, 10385,
          4097, 9377, 11041, 12113, 12289, 14849, 14865, 16225, 16385, 16401,
          3289, 4393, 6105, 6145, 8193, 10121, 10241, 10561, 12417, 17057, 18433, 20481, 26881]
COLS = sorted({1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 96, 100, 127, 128, 129, 200,
               255, 256, 257, 320, 500, 511, 512, 513, 768, 1000, 1023, 1024, 1025, 2047, 2048, 2049, 2560,
               3000, 4095, 4096, 5120, 6080, 7168, 8191, 8192, 12288, 13824, 16384, 20000, 32768, 65536,
               100000, 1000000, 1 << 22}
              | set(_EDGES) | {c - 1 for c in _EDGES})
ROWS = (1, 4096)                 # every width and dtype
ROWS_MORE = (0, 3, 48, 1 << 20)  # every width, float16 only: the row groups' budget
CAPS = (("Ascend910B2", 7), ("Ascend910B3", 0), ("Ascend910_93", 0))  # every width, bfloat16, 4096 rows


def grid():
    """(rows, cols, dtype, soc, block_dim cap) of every recorded case."""
    for cols in COLS:
        for dtype in DTYPES:
            for rows in ROWS:
                yield rows, cols, dtype, "Ascend910B2", 0
        for rows in ROWS_MORE:
            yield rows, cols, "float16", "Ascend910B2", 0
        for soc, cap in CAPS:
            yield 4096, cols, "bfloat16", soc, cap


def decide(rows, cols, dtype, soc, cap) -> dict:
    """The tiling's decision for one case, as plain JSON values."""
    from rmsnorm_backward import _tiling

    shape = [rows, cols]
    r = _tiling.compute_tiling(dy_shape=shape, x_shape=shape, rstd_shape=[rows, 1], gamma_shape=[cols],
                             dy_dtype=dtype, x_dtype=dtype, rstd_dtype="float32", gamma_dtype=dtype, soc=soc,
                             block_dim=cap)
    return {"path": r["path"], "tiling_key": r["tiling_key"], "block_dim": r["block_dim"],
            "workspace_bytes": r["workspace_bytes"], "user_workspace_bytes": r["user_workspace_bytes"],
            "min_bytes": r["min_bytes"], "fields": dict(r["fields"])}


def record() -> list:
    """Every case's decision, compactly: the field names once, then one row of values per case."""
    cases = [(case, decide(*case)) for case in grid()]
    names = list(cases[0][1]["fields"])
    rows = [[*case, d["path"], d["tiling_key"], d["block_dim"], d["workspace_bytes"], d["user_workspace_bytes"],
             d["min_bytes"], [d["fields"][n] for n in names]] for case, d in cases]
    return [{"fields": names}, *rows]


def read() -> tuple[list, list]:
    """(field names, case rows) of the recorded snapshot."""
    header, *rows = (json.loads(line) for line in SNAPSHOT.read_text().splitlines())
    return header["fields"], rows


if __name__ == "__main__":
    SNAPSHOT.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in record()))
    sys.exit(0)
