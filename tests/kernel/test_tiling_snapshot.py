"""No behaviour change: the plain tiling decides every case of the snapshot grid
(tests/kernel/tiling_snapshot.py) as it did when the snapshot was recorded."""
import json

import tiling_snapshot

WHOLE_ROW_PATHS = ("rows_in_ub", "small_cols")


def expected(old: dict) -> dict:
    """The decision the snapshot's record means under today's names and fields. Intended changes
    since it was recorded, each field's meaning only, no decision:
    - resident_cols (read by no kernel) is gone;
    - gamma_resident_cols is dgamma_ub_cols, read by the streamed path alone (the long-rows path
      holds gamma and dgamma whole): 0 on the other paths;
    - chunk_cols, sum_cols and row_buffers belong to the long-rows paths: 0 on the paths that hold
      whole rows (they were row_stride, row_stride and 1 there), row_buffers 0 on the streamed path."""
    fields = dict(old["fields"])
    del fields["resident_cols"]
    streamed = old["path"] == "long_rows_streamed"
    gamma_resident_cols = fields.pop("gamma_resident_cols")
    fields["dgamma_ub_cols"] = gamma_resident_cols if streamed else 0
    if old["path"] in WHOLE_ROW_PATHS:
        fields.update(chunk_cols=0, sum_cols=0, row_buffers=0)
    if streamed:
        fields["row_buffers"] = 0
    return {**old, "fields": fields}


def recorded():
    data = json.loads(tiling_snapshot.SNAPSHOT.read_text())
    for row in data["cases"]:
        case, values = tuple(row[:5]), row[5:]
        path, key, block_dim, workspace, user_workspace, min_bytes, fields = values
        yield case, {"path": path, "tiling_key": key, "block_dim": block_dim, "workspace_bytes": workspace,
                     "user_workspace_bytes": user_workspace, "min_bytes": min_bytes,
                     "fields": dict(zip(data["fields"], fields))}


def test_the_snapshot_covers_the_grid():
    cases = [case for case, _ in recorded()]
    assert cases == list(tiling_snapshot.grid()) and len(cases) >= 500
    assert {d["path"] for _, d in recorded()} == {"rows_in_ub", "long_rows", "small_cols", "long_rows_streamed"}


def test_every_decision_is_unchanged():
    changed = []
    for case, old in recorded():
        now = tiling_snapshot.decide(*case)
        if now != expected(old):
            changed.append(f"{case}: recorded {expected(old)}, now {now}")
    assert not changed, f"{len(changed)} tiling decisions changed, first: {changed[0]}"
