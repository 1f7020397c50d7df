# SPDX-License-Identifier: BSD-3-Clause
"""The launcher: run_kernel on kernel sources outside the tree, cores as threads, per-core counters,
tiling and workspace macros, compile errors, GM bounds, guard canaries and stuck SyncAll.

The kernels here use scalar GM access only, so they test the launcher and not the API families.
"""

import re

import ml_dtypes
import numpy as np
import pytest

from ascendc_twin import resources
from ascendc_twin.errors import InvalidInputError, KernelCompileError, TwinRuleError
from ascendc_twin import compile_kernel, gm_array, gm_empty, run_kernel, soc_info

PRELUDE = '#include "kernel_operator.h"\nusing namespace AscendC;\n'

# Each core scales its contiguous chunk of x into y (y = x * 2 + block index) and records
# GetBlockIdx / GetBlockNum in its two slots of info.
CHUNKS = PRELUDE + """
extern "C" __global__ __aicore__ void chunks(GM_ADDR x, GM_ADDR y, GM_ADDR info, GM_ADDR n_ptr)
{
    GlobalTensor<int32_t> n_gm;
    n_gm.SetGlobalBuffer((__gm__ int32_t *)n_ptr, 1);
    const int64_t per = n_gm.GetValue(0) / GetBlockNum();
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float *)x + GetBlockIdx() * per, per);
    yg.SetGlobalBuffer((__gm__ float *)y + GetBlockIdx() * per, per);
    for (int64_t i = 0; i < per; ++i) {
        yg.SetValue(i, xg.GetValue(i) * 2.0f + float(GetBlockIdx()));
    }
    GlobalTensor<int32_t> ig;
    ig.SetGlobalBuffer((__gm__ int32_t *)info + 2 * GetBlockIdx(), 2);
    ig.SetValue(0, GetBlockIdx());
    ig.SetValue(1, GetBlockNum());
}
"""


@pytest.mark.parametrize("block_dim", [1, 8])
def test_each_core_does_its_part_and_counts_it(run_source, rng, block_dim):
    per = int(rng.integers(1, 200))
    x = rng.standard_normal(per * block_dim).astype(np.float32)
    y = np.full_like(x, np.nan)
    info = np.full(2 * block_dim, -1, np.int32)
    stats = run_source(CHUNKS, "chunks", {"x": x, "y": y, "info": info, "n": np.array([x.size], np.int32)},
                       block_dim=block_dim)
    core_of = np.repeat(np.arange(block_dim, dtype=np.float32), per)
    np.testing.assert_array_equal(y, x * np.float32(2) + core_of)
    np.testing.assert_array_equal(info.reshape(block_dim, 2), [[b, block_dim] for b in range(block_dim)])
    assert stats.block_dim == block_dim and len(stats.cores) == block_dim
    for core in stats.cores:
        assert core["gm_scalar_reads"] == per + 1
        assert core["gm_scalar_writes"] == per + 2
        assert core["gm_read_bytes"] == 0 and core["vector_instrs"] == 0
    assert stats.total["gm_scalar_writes"] == block_dim * (per + 2)


def test_compile_error_carries_gcc_message(run_source):
    with pytest.raises(KernelCompileError, match=r"(?s)error:.*undeclared_thing"):
        run_source(PRELUDE + 'extern "C" __global__ __aicore__ void broken(GM_ADDR x) { undeclared_thing(x); }',
                   "broken", [np.zeros(8, np.float32)])


def test_missing_entry_is_a_compile_error(run_source):
    with pytest.raises(KernelCompileError, match="not_there"):
        run_source(CHUNKS, "not_there", [np.zeros(8, np.float32)])


def test_entry_parameters_must_be_gm_addresses(run_source):
    with pytest.raises(KernelCompileError, match="every kernel entry parameter must be a GM_ADDR"):
        run_source(PRELUDE + 'extern "C" __global__ __aicore__ void by_value(GM_ADDR x, uint32_t n) {}',
                   "by_value", [np.zeros(8, np.float32), np.zeros(1, np.uint32)])


OUT_OF_BOUNDS = PRELUDE + """
extern "C" __global__ __aicore__ void poke(GM_ADDR out, GM_ADDR where)
{
    GlobalTensor<int32_t> w;
    w.SetGlobalBuffer((__gm__ int32_t *)where, 1);
    GlobalTensor<float> o;
    o.SetGlobalBuffer((__gm__ float *)out);
    if (GetBlockIdx() == GetBlockNum() - 1) {
        o.SetValue(w.GetValue(0), 1.5f);
    }
}
"""


@pytest.mark.parametrize("block_dim", [1, 4])
def test_gm_access_past_the_end_names_buffer_and_distance(run_source, rng, block_dim):
    n = int(rng.integers(1, 100))
    out = np.zeros(n, np.float32)
    with pytest.raises(TwinRuleError, match=rf"^core {block_dim - 1}: GlobalTensor::SetValue: the GM access must "
                                            rf"stay inside .*'out', which has {4 * n} bytes: 4 bytes past its end"):
        run_source(OUT_OF_BOUNDS, "poke", {"out": out, "where": np.array([n], np.int32)}, block_dim=block_dim)
    run_source(OUT_OF_BOUNDS, "poke", {"out": out, "where": np.array([n - 1], np.int32)}, block_dim=block_dim)
    assert out[n - 1] == 1.5


def test_gm_access_before_the_start(run_source):
    with pytest.raises(TwinRuleError, match=r"byte offset -8 of 'out'.*8 bytes before its start"):
        run_source(OUT_OF_BOUNDS, "poke", {"out": np.zeros(4, np.float32), "where": np.array([-2], np.int32)})


RAW_WRITE = PRELUDE + """
extern "C" __global__ __aicore__ void raw_write(GM_ADDR out, GM_ADDR where)
{
    const int32_t i = *(__gm__ int32_t *)where;
    ((__gm__ float *)out)[i] = 2.5f;
}
"""


def test_raw_pointer_write_past_the_end_hits_the_canary(run_source, rng):
    n = int(rng.integers(1, 100))
    with pytest.raises(TwinRuleError, match=r"GM buffer 'out': a write reaching 1[3-6] bytes past its end"):
        run_source(RAW_WRITE, "raw_write", {"out": np.zeros(n, np.float32), "where": np.array([n + 3], np.int32)})
    with pytest.raises(TwinRuleError, match=r"GM buffer 'out': a write reaching [1-4] bytes before its start"):
        run_source(RAW_WRITE, "raw_write", {"out": np.zeros(n, np.float32), "where": np.array([-1], np.int32)})
    out = np.zeros(n, np.float32)
    run_source(RAW_WRITE, "raw_write", {"out": out, "where": np.array([n - 1], np.int32)})
    assert out[n - 1] == 2.5


def test_gm_resident_arrays_run_in_place_and_keep_their_guards(run_source, rng):
    n = int(rng.integers(8, 100))
    out = gm_array(rng.standard_normal(n).astype(np.float32))
    before = out.copy()
    with pytest.raises(TwinRuleError, match=r"GM buffer 'out': a write reaching 1[3-6] bytes past its end"):
        run_source(RAW_WRITE, "raw_write", {"out": out, "where": np.array([n + 3], np.int32)})
    np.testing.assert_array_equal(out[:n - 1], before[:n - 1])
    run_source(RAW_WRITE, "raw_write", {"out": out, "where": gm_array(np.array([n - 1], np.int32))})
    assert out[n - 1] == 2.5
    np.testing.assert_array_equal(out[:n - 1], before[:n - 1])

    per, block_dim = n, 8
    x = gm_array(rng.standard_normal(per * block_dim).astype(np.float32))
    y, info = gm_empty(x.shape, np.float32), gm_empty(2 * block_dim, np.int32)
    run_source(CHUNKS, "chunks", [x, y, info, np.array([x.size], np.int32)], block_dim=block_dim)
    np.testing.assert_array_equal(y, x * np.float32(2) + np.repeat(np.arange(block_dim, dtype=np.float32), per))


# Every core but `skipper` waits in SyncAll (on the NPU they would hang), then reads what its
# neighbour wrote before it.
SYNC = PRELUDE + """
extern "C" __global__ __aicore__ void sync_cores(GM_ADDR skipper, GM_ADDR before, GM_ADDR after)
{
    const int32_t skip = *(__gm__ int32_t *)skipper;
    GlobalTensor<int32_t> b, a;
    b.SetGlobalBuffer((__gm__ int32_t *)before, GetBlockNum());
    a.SetGlobalBuffer((__gm__ int32_t *)after, GetBlockNum());
    if (GetBlockIdx() == skip) {
        return;
    }
    b.SetValue(GetBlockIdx(), GetBlockIdx() + 1);
    SyncAll();
    a.SetValue(GetBlockIdx(), b.GetValue((GetBlockIdx() + 1) % GetBlockNum()));
}
"""


def test_core_returning_past_syncall_is_an_error_not_a_hang(run_source, rng):
    skip = int(rng.integers(0, 8))
    with pytest.raises(TwinRuleError, match=rf"SyncAll: core {skip} returned from the kernel without reaching "
                                            r"SyncAll \(the NPU would hang\)"):
        run_source(SYNC, "sync_cores", [np.array([skip], np.int32), np.zeros(8, np.int32), np.zeros(8, np.int32)],
                   block_dim=8)
    after = np.zeros(8, np.int32)
    stats = run_source(SYNC, "sync_cores", [np.array([-1], np.int32), np.zeros(8, np.int32), after], block_dim=8)
    np.testing.assert_array_equal(after, (np.arange(8) + 1) % 8 + 1)
    assert all(core["sync_alls"] == 1 for core in stats.cores)


def test_a_failing_core_releases_the_cores_waiting_in_syncall(run_source, rng):
    failing = int(rng.integers(0, 8))  # 'before' holds `failing` ints: cores failing..7 write past it
    with pytest.raises(TwinRuleError, match=rf"^core [{failing}-7]: GlobalTensor::SetValue: the GM access"):
        run_source(SYNC, "sync_cores", [np.array([-1], np.int32), np.zeros(failing, np.int32), np.zeros(8, np.int32)],
                   block_dim=8)


TILING = PRELUDE + """
struct DemoTiling {
    int32_t count;
    float scale;
};
extern "C" __global__ __aicore__ void tiled(GM_ADDR out, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    GlobalTensor<float> o;
    o.SetGlobalBuffer((__gm__ float *)out, t.count);
    const float sign = TILING_KEY_IS(7) ? -1.0f : 1.0f;
    for (int32_t i = 0; i < t.count; ++i) {
        o.SetValue(i, sign * t.scale * float(i));
    }
}
"""


@pytest.mark.parametrize("key", [0, 7])
def test_tiling_struct_and_key(run_source, rng, key):
    count = int(rng.integers(1, 50))
    scale = np.float32(rng.standard_normal())
    tiling = np.zeros(2, np.int32)
    tiling[0] = count
    tiling[1:].view(np.float32)[0] = scale
    out = np.zeros(count, np.float32)
    run_source(TILING, "tiled", [out, tiling], tiling_key=key, defines={"TWIN_TILING_STRUCT": "DemoTiling"})
    sign = np.float32(-1 if key == 7 else 1)
    np.testing.assert_array_equal(out, sign * scale * np.arange(count, dtype=np.float32))


def test_tiling_buffer_smaller_than_the_struct(run_source):
    with pytest.raises(TwinRuleError, match=r"GET_TILING_DATA_WITH_STRUCT: .*'args\[1\]', which has 4 bytes"):
        run_source(TILING, "tiled", [np.zeros(4, np.float32), np.array([1], np.int32)],
                   defines=["TWIN_TILING_STRUCT=DemoTiling"])


WORKSPACE = PRELUDE + """
extern "C" __global__ __aicore__ void user_ws(GM_ADDR workspace, GM_ADDR value)
{
    GlobalTensor<float> ws;
    ws.SetGlobalBuffer((__gm__ float *)GetUserWorkspace(workspace), 1);
    ws.SetValue(0, *(__gm__ float *)value);
}
"""


def test_user_workspace_follows_the_system_part(run_source, rng):
    sys_bytes = soc_info("Ascend910B2")["sys_workspace_bytes"]
    workspace = np.zeros(sys_bytes + 32, np.uint8)
    value = rng.standard_normal(1).astype(np.float32)
    run_source(WORKSPACE, "user_ws", [workspace, value])
    assert workspace[sys_bytes:sys_bytes + 4].view(np.float32)[0] == value[0]
    assert not workspace[:sys_bytes].any()
    with pytest.raises(TwinRuleError, match="GetUserWorkspace"):
        run_source(WORKSPACE, "user_ws", [np.zeros(1024, np.uint8), value])


SIGN_FLIP = PRELUDE + """
extern "C" __global__ __aicore__ void neg_bf16(GM_ADDR x, GM_ADDR n_ptr)
{
    GlobalTensor<uint16_t> g;
    const int32_t n = *(__gm__ int32_t *)n_ptr;
    g.SetGlobalBuffer((__gm__ uint16_t *)x, n);
    for (int32_t i = 0; i < n; ++i) {
        g.SetValue(i, g.GetValue(i) ^ 0x8000);
    }
}
"""


def test_bf16_arrays_pass_through_bit_exact(run_source, rng):
    x = rng.standard_normal(37).astype(ml_dtypes.bfloat16)
    want = -x
    run_source(SIGN_FLIP, "neg_bf16", [x, np.array([x.size], np.int32)])
    np.testing.assert_array_equal(x.view(np.uint16), want.view(np.uint16))


def test_bad_launch_options_are_one_sentence_errors(run_source):
    args = [np.zeros(8, np.float32), np.array([0], np.int32)]
    with pytest.raises(InvalidInputError, match=r"soc must be one of .*Ascend910B2.*'Ascend310P3'"):
        run_source(SIGN_FLIP, "neg_bf16", args, soc="Ascend310P3")
    cores = soc_info("Ascend910B3")["vector_cores"]
    for bad in (0, cores + 1):
        with pytest.raises(InvalidInputError, match=rf"block_dim must be an integer from 1 to {cores}"):
            run_source(SIGN_FLIP, "neg_bf16", args, soc="Ascend910B3", block_dim=bad)
    with pytest.raises(InvalidInputError, match="takes 2 GM_ADDR arguments but 3 buffers were passed"):
        run_source(SIGN_FLIP, "neg_bf16", args + [np.zeros(1)])
    with pytest.raises(InvalidInputError, match=r"args\[0\] must be C-contiguous"):
        run_source(SIGN_FLIP, "neg_bf16", [np.zeros(8, np.float32)[::2], args[1]])
    with pytest.raises(InvalidInputError, match=r"GM argument x must be a NumPy array of numbers \(or None\), got list"):
        run_source(SIGN_FLIP, "neg_bf16", {"x": [1.0, 2.0], "n": args[1]})
    with pytest.raises(InvalidInputError, match="tiling_key must be a non-negative 64-bit integer"):
        run_source(SIGN_FLIP, "neg_bf16", args, tiling_key=-1)


def test_cache_follows_the_content_of_headers_beside_the_source(tmp_path, rng):
    source = tmp_path / "scaled.cpp"
    source.write_text(PRELUDE + '#include "factor.h"\n' + """
extern "C" __global__ __aicore__ void scaled(GM_ADDR x)
{
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float *)x, 1);
    g.SetValue(0, g.GetValue(0) * FACTOR);
}
""")
    results = []
    for factor in (3, 5, 3):
        (tmp_path / "factor.h").write_text(f"#define FACTOR {factor}.0f\n")
        x = rng.standard_normal(1).astype(np.float32)
        out = x.copy()
        run_kernel(source, "scaled", [out], optimize=False)
        results.append(compile_kernel(source, "scaled", optimize=False))
        assert out[0] == x[0] * np.float32(factor)
    assert results[0] == results[2] != results[1]



def test_cache_follows_a_source_file_the_entry_includes(tmp_path, rng):
    """Two entries of identical text in two places, each including its own body.cpp (not a header):
    each runs its own body, although their text and place-free key would otherwise agree."""
    outs = []
    for factor in (3, 7):
        where = tmp_path / f"k{factor}"
        where.mkdir()
        (where / "body.cpp").write_text(PRELUDE + f"constexpr float kFactor = {factor}.0f;\n")
        (where / "entry.cpp").write_text('#include "body.cpp"\n' + """
extern "C" __global__ __aicore__ void body_scaled(GM_ADDR x)
{
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float *)x, 1);
    g.SetValue(0, g.GetValue(0) * kFactor);
}
""")
        x = rng.standard_normal(1).astype(np.float32)
        out = x.copy()
        run_kernel(where / "entry.cpp", "body_scaled", [out], optimize=False)
        assert out[0] == x[0] * np.float32(factor)
        outs.append(compile_kernel(where / "entry.cpp", "body_scaled", optimize=False))
    assert outs[0] != outs[1]

DEMO = resources.path("demo/scaled_sum.cpp")


@pytest.mark.parametrize("block_dim", [1, 3, 8])
def test_demo_kernel_of_the_benchmark_matches_numpy(rng, block_dim):
    tiles, tile_len = int(rng.integers(1, 20)), 64 * int(rng.integers(1, 33))
    x = gm_array(rng.standard_normal(tiles * tile_len).astype(np.float32))
    y = rng.standard_normal(tiles * tile_len).astype(np.float32)
    z, sums = gm_empty(x.shape, np.float32), np.zeros(tiles, np.float32)
    stats = run_kernel(DEMO, "scaled_sum", {"x": x, "y": y, "z": z, "sums": sums,
                                            "tiling": np.array([tiles, tile_len], np.uint32)}, block_dim=block_dim)
    want = (x * y + x) * np.float32(0.5)
    np.testing.assert_array_equal(z, want)
    by_tile = want.reshape(tiles, tile_len).astype(np.float64)
    # fp32 error bound of a 64-lane tree per repeat, then the repeats summed in order
    steps = 6 + tile_len // 64
    bound = steps * np.finfo(np.float32).eps * np.abs(by_tile).sum(axis=1)
    assert np.all(np.abs(sums - by_tile.sum(axis=1)) <= bound)
    assert stats.total["gm_read_bytes"] == 2 * x.nbytes
    assert stats.total["gm_write_bytes"] == z.nbytes + sums.nbytes



def test_soc_table_binding_names_every_field_of_the_struct():
    # VisitFacts (platform.h) names the fields for Python: a field added to SocInfo without it would be
    # invisible to the performance model, so the binding must list exactly the struct's fields.
    text = resources.path("include/twin/platform.h").read_text()
    body = text[text.index("struct SocInfo {"):text.index("};", text.index("struct SocInfo {"))]
    fields = re.findall(r"^\s+(?:const char \*|uint32_t |uint64_t |double )(\w+);", body, re.M)
    assert len(fields) >= 10
    assert set(soc_info("Ascend910B2")) == set(fields) | {"ub_usable_bytes"}



def test_optimize_changes_no_result(rng):
    # -O0 and -O2 builds of the demo give the same bits and the same counters (floats as written:
    # -ffp-contract=off, no fast-math), so tests may build small kernels at -O0.
    tiles, tile_len = 5, 64 * int(rng.integers(1, 33))
    x = rng.standard_normal(tiles * tile_len).astype(np.float32)
    y = rng.standard_normal(tiles * tile_len).astype(np.float32)
    runs = []
    for optimize in (True, False):
        z, sums = np.zeros_like(x), np.zeros(tiles, np.float32)
        stats = run_kernel(DEMO, "scaled_sum", {"x": x, "y": y, "z": z, "sums": sums,
                                                "tiling": np.array([tiles, tile_len], np.uint32)},
                           block_dim=3, optimize=optimize)
        runs.append((z.tobytes(), sums.tobytes(), stats.total))
    assert runs[0] == runs[1]
    assert runs[0][0] != np.zeros_like(x).tobytes()
