# SPDX-License-Identifier: BSD-3-Clause
"""The plain tiling's choices: the path per shape, row groups fixed by the shape alone, the block dim."""
import pytest

from rmsnorm_backward import _tiling


def tiling(rows, cols, dtype="float16", soc="Ascend910B2", block_dim=0, gamma=True):
    shape = [rows, cols]
    return _tiling.compute_tiling(dy_shape=shape, x_shape=shape, rstd_shape=[rows, 1],
                                gamma_shape=[cols] if gamma else None, dy_dtype=dtype, x_dtype=dtype,
                                rstd_dtype="float32", gamma_dtype=dtype if gamma else "", soc=soc, block_dim=block_dim)


@pytest.mark.parametrize("dtype,cols,path", [
    ("float16", 1, "small_cols"), ("float16", 128, "small_cols"), ("float32", 128, "small_cols"),
    ("float16", 129, "small_cols"), ("float16", 816, "small_cols"), ("float16", 817, "rows_in_ub"),
    ("float32", 576, "small_cols"), ("float32", 577, "rows_in_ub"), ("float32", 2000, "rows_in_ub"),
    ("float16", 2432, "rows_in_ub"), ("float16", 2433, "long_rows"), ("bfloat16", 3000, "long_rows"),
    ("float16", 6080, "long_rows"), ("bfloat16", 12288, "long_rows"), ("float32", 8192, "long_rows"),
    ("float16", 12289, "long_rows"), ("float16", 16897, "long_rows"), ("float16", 19456, "long_rows"),
    ("bfloat16", 12289, "long_rows"), ("bfloat16", 16384, "long_rows"), ("bfloat16", 16385, "long_rows_streamed"),
    ("float32", 12288, "long_rows"), ("float32", 13312, "long_rows"), ("float32", 13313, "long_rows"),
    ("float32", 17408, "long_rows"), ("float32", 17409, "long_rows_streamed"), ("float16", 20000, "long_rows_streamed"),
    ("float32", 1000000, "long_rows_streamed"),
])
def test_path_by_width(dtype, cols, path):
    assert tiling(64, cols, dtype)["path"] == path


@pytest.mark.parametrize("dtype,cols", [("float16", 12288), ("bfloat16", 12288), ("float32", 8192)])
def test_long_rows_up_to_the_goal_stay_resident(dtype, cols):
    result = tiling(4096, cols, dtype)
    assert result["path"] == "long_rows" and result["fields"]["row_buffers"] >= 1
    assert result["fields"]["dgamma_ub_cols"] == (0 if dtype == "bfloat16" else cols)  # bf16: below


# bf16 has no half-source MulAddDst: a widened gamma costs 2 of a chunk's 13 vector instructions. So
# bf16 rows in a 3072-col ring send dgamma to the group's GM partial and hold gamma in fp32 in its
# UB; fp16 rows form dy*gamma from the halves, gain nothing from an fp32 gamma and keep dgamma whole.
@pytest.mark.parametrize("cols", [8193, 10000, 12288])
def test_bf16_ring_rows_hold_gamma_in_fp32_where_dgamma_was(cols):
    bf16, fp16 = tiling(4096, cols, "bfloat16"), tiling(4096, cols, "float16")
    assert bf16["path"] == fp16["path"] == "long_rows"
    assert bf16["fields"]["chunk_cols"] == fp16["fields"]["chunk_cols"] == 3072
    assert bf16["fields"]["dgamma_ub_cols"] == 0 and fp16["fields"]["dgamma_ub_cols"] == cols


# Rows too long to hold beside gamma and a whole fp32 dgamma keep dgamma in the group's GM partial, in
# a ring with dx over dy, on every core: fp32 rows from about 10000 cols, and fp16 rows past 12288 cols,
# which keep gamma in fp16 (they gain nothing from an fp32 one) and so hold rows of up to about 19500
# cols, read once: in the fewest chunks of at least 3072 cols that fit, of equal length (no stub of a
# last chunk, which would cost a whole chunk's issues), else in 3072-col chunks, else in 2432-col ones.
# fp16: the chunk's cols (16897: five of 3456 do not fit; 18432: six or seven of 3072 do not either)
FP16_GM_CHUNK_COLS = {12289: 3200, 14336: 3584, 16384: 3328, 16897: 3072, 18432: 2432}


@pytest.mark.parametrize("dtype,cols", [("float32", 10241), ("float32", 12288), ("float32", 13080),
                                        ("float32", 13312), ("float32", 13313), ("float32", 16384),
                                        ("float32", 17408), ("float16", 12289), ("float16", 14336),
                                        ("float16", 16384), ("float16", 16897), ("float16", 18432)])
def test_rows_past_a_whole_dgamma_keep_it_in_gm(dtype, cols):
    result = tiling(4096, cols, dtype)
    fields = result["fields"]
    assert result["path"] == "long_rows" and fields["dgamma_ub_cols"] == 0
    assert fields["row_buffers"] == 1 and fields["dx_over_dy"] == 1 and fields["groups"] == 48
    if dtype == "float16":
        chunk, chunks = fields["chunk_cols"], -(-cols // fields["chunk_cols"])
        assert chunk == FP16_GM_CHUNK_COLS[cols] and fields["spare_slots"] == 2
        assert cols - (chunks - 1) * chunk >= chunk // 2
    else:  # fp32 rows past a whole gamma beside them take it in chunks, with two spare slots at least
        chunks_of_gamma = cols > 13312
        assert fields["gamma_slots"] == (2 if chunks_of_gamma else 0)
        assert not chunks_of_gamma or fields["spare_slots"] >= 2
        if cols <= 12288:  # fp16 rows of these widths still hold a whole dgamma beside the ring
            assert tiling(4096, cols, "float16")["fields"]["dgamma_ub_cols"] == cols


# Without gamma there is no dgamma: the UB a whole dgamma (or the partial's chunks) would take holds
# the row, so rows that stream with gamma stay whole, read once.
@pytest.mark.parametrize("dtype,cols", [("float32", 12288), ("float32", 18432), ("float32", 20000),
                                        ("float16", 16384), ("bfloat16", 24576)])
def test_rows_without_gamma_hold_the_row_where_dgamma_would_be(dtype, cols):
    plain, with_gamma = tiling(4096, cols, dtype, gamma=False), tiling(4096, cols, dtype)
    assert plain["path"] == "long_rows" and plain["fields"]["dgamma_ub_cols"] == cols
    assert plain["fields"]["chunk_cols"] > with_gamma["fields"]["chunk_cols"] or with_gamma["path"] == "long_rows_streamed"
    if cols > 12288 and dtype != "float16":
        assert with_gamma["path"] == "long_rows_streamed"


@pytest.mark.parametrize("cols,min_slots", [(17536, 3), (18432, 3)])
def test_streamed_rows_keep_gamma_and_dgamma_whole_and_stream_dy_and_x(cols, min_slots):
    fields = tiling(4096, cols, "float32")["fields"]
    assert fields["gamma_slots"] == 0 and fields["dgamma_ub_cols"] == cols
    assert fields["stream_slots"] >= min_slots and fields["chunk_cols"] % 64 == 0
    chunks = -(-cols // fields["chunk_cols"])
    assert cols - (chunks - 1) * fields["chunk_cols"] >= fields["chunk_cols"] // 2  # no stub of a last chunk


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rows_beyond_ub_stream_gamma_and_keep_the_head_of_dgamma(dtype):
    fields = tiling(3, 1000000, dtype)["fields"]
    assert fields["gamma_slots"] >= 1 and fields["stream_slots"] >= 2
    assert 0 < fields["dgamma_ub_cols"] < 1000000
    assert fields["dgamma_ub_cols"] % fields["chunk_cols"] == 0


@pytest.mark.parametrize("rows,cols,dtype", [(4096, 4096, "float16"), (1 << 20, 64, "float16"),
                                             (3000, 700, "float32"), (48, 16384, "bfloat16")])
def test_groups_and_tiling_do_not_depend_on_block_dim_or_soc(rows, cols, dtype):
    reference = tiling(rows, cols, dtype)
    for soc, cap in (("Ascend910B2", 1), ("Ascend910B2", 7), ("Ascend910B3", 0), ("Ascend910_93", 20)):
        other = tiling(rows, cols, dtype, soc=soc, block_dim=cap)
        assert other["tiling"] == reference["tiling"]
        assert other["block_dim"] == min(reference["fields"]["groups"], cap or (40 if soc == "Ascend910B3" else 48))


@pytest.mark.parametrize("rows,cols,dtype,groups", [
    (48, 4096, "float16", 1), (4096, 4096, "float16", 48), (1 << 20, 32, "float16", 48), (1, 10, "float32", 1),
    (0, 10, "float32", 1),
])
def test_group_count_follows_the_traffic_budget(rows, cols, dtype, groups):
    result = tiling(rows, cols, dtype)
    assert result["fields"]["groups"] == groups
    s = 2 if dtype != "float32" else 4
    extra = groups * cols * (8 + s) - cols * s if groups > 1 else 0
    assert extra <= 0.02 * result["min_bytes"]
    assert result["user_workspace_bytes"] == (groups * result["fields"]["partial_stride"] * 4 if groups > 1 else 0)
