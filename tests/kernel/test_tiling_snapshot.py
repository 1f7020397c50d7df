"""No behaviour change: the plain tiling decides every case of the snapshot grid
(tests/kernel/tiling_snapshot.py) as it did when the snapshot was recorded.

Recorded again when decisions were meant to change (each said so in its commit): last when 16-bit
long rows stopped taking chunks under 3072 cols and rings without spare slots, so that 16-bit rows
above 12288 cols stream (issue 17): 356 of the 1456 cases, all 16-bit long rows of 9377 cols and
more (165 now stream, 132 take a 3072-col ring) and 16-bit streamed rows up to 18433 cols (55: four
slots instead of three), and the 4 fp32 rows of 10272-10415 cols that took 1536-col chunks. The field renames of the structure
refactor (issue 15), which changed no decision, were checked against the first recording before.
Recorded again for the fields gamma_offset, gamma_bytes and has_dres (issue 16), after checking that
all 1456 cases decided as recorded with those at gamma_offset 0, gamma_bytes sizeof(T) and has_dres 0.
Recorded again when three row buffers holding the whole row as one chunk (chunk_cols = sum_cols = the
row's stride) led the long-rows table (issue 17): 50 cases, 16-bit rows of 4097-5120 cols leave the
4096-col ring for them (4096 x 5120 fp16 91.2 -> 90.1 us modelled, 4096 x 4097 81.9 -> 73.6), fp32
rows of 3129-3289 cols keep their one chunk under the new name (chunk_cols 4096 -> their stride; 3289
cols now fit three buffers instead of two, the same modelled time).
Recorded again when small-cols rows of 24 to 56 fp32 lanes took a row's scalars as one block per row
(no longer spread over the row, nor gamma over the whole tile): 78 cases, tile_rows only, every one a
small-cols row of stride 24-48 (16-bit 32: 152 -> 184 rows, 48: 88 -> 128; fp32 24: 144 -> 176, 32:
112 -> 128, 40: 88 -> 104, 48: 72 -> 88), the UB the per-row buffers freed (32x32x48 fp16 8.19 ->
8.07 us modelled, 1048576x32 fp16 140.4 -> 140.1)."""
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
