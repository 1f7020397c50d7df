# SPDX-License-Identifier: BSD-3-Clause
"""No behaviour change: the plain tiling decides every case of the snapshot grid
(tests/kernel/tiling_snapshot.py) as it did when the snapshot was recorded.

The snapshot is recorded again only when decisions are meant to change, and the commit that records
it names which cases change and why (git keeps those reasons); a change of field names alone is
checked against the recording first, and new fields are recorded only after every case decides as
recorded with them at their neutral values."""
import tiling_snapshot


def recorded():
    names, rows = tiling_snapshot.read()
    for row in rows:
        case, values = tuple(row[:5]), row[5:]
        path, key, block_dim, workspace, user_workspace, min_bytes, fields = values
        yield case, {"path": path, "tiling_key": key, "block_dim": block_dim, "workspace_bytes": workspace,
                     "user_workspace_bytes": user_workspace, "min_bytes": min_bytes,
                     "fields": dict(zip(names, fields))}


def test_the_snapshot_covers_the_grid():
    cases = [case for case, _ in recorded()]
    assert cases == list(tiling_snapshot.grid()) and len(cases) >= 500
    assert {d["path"] for _, d in recorded()} == {"rows_in_ub", "long_rows", "small_cols", "long_rows_streamed"}


def test_every_decision_is_unchanged():
    changed = []
    for case, old in recorded():
        now = tiling_snapshot.decide(*case)
        if now != old:
            changed.append(f"{case}: recorded {old}, now {now}")
    assert not changed, f"{len(changed)} tiling decisions changed, first: {changed[0]}"
