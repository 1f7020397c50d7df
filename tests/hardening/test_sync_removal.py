# SPDX-License-Identifier: BSD-3-Clause
"""Every synchronisation of the kernel is needed, and the tests see it go: each one removed in turn
(one mutant at a time) must be caught by a twin rule, the input check (conftest) or the golden.

The sites are found by parsing op_kernel/ (so they follow the kernel as it changes), and the kernel
is compiled once, instrumented: each site k is guarded by `twin_mutant_site != k`, a variable the
test sets in the loaded kernel before each launch. A site is
- a SetFlag/WaitFlag pair: both statements of one event and event id in one file (one removed alone
  would be a hang or a flag left set, which the twin reports at once, so pairs are what matter);
- a WaitFor<HardEvent::X> call (the kernel's SetFlag + WaitFlag in one step);
- a PipeBarrier or SyncAll statement;
- a queue handshake: the DeQue calls ("EnQue/DeQue", the flag from the producer pipe to the
  consumer) or the AllocTensor calls ("FreeTensor/AllocTensor", the flag back) of one function on
  queues of one position keep their bookkeeping but wait for nothing (twin::g_queue_wait_dropped).
  One handshake point, not one queue: where a function takes several buffers from the same pipe at
  once (dy, x and rstd of a tile), the first wait already orders what the others would, on the NPU as
  on the twin (a flag waits for all the pipe's earlier work), so one of them alone is no sync a
  kernel could remove.
A mutant is tried on the cases of the paths whose files hold its site, and counts as caught when one
of them fails. A sync no case misses is either a twin gap (fix the twin) or one the kernel does not
need (remove it); REDUNDANT lists the one kind a kernel cannot remove, a queue's own flag that an
earlier handshake always orders, with the reason; the test holds it to exactly that list.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

import rmsnorm_backward.simulate as simulate_module
from rmsnorm_backward.twin import compile_kernel
from rmsnorm_backward.errors import KernelRuleError
from rmsnorm_backward.golden import golden
from rmsnorm_backward.precision import compare

from kernel_variants import ENTRY, KERNEL_DIR, kernel_copy
from launch_checks import InputChanged
from operator_inputs import make_dres, make_inputs

COMMON = "rms_norm_backward_common.h"

STATEMENT = re.compile(r"(?:(?P<flag>SetFlag|WaitFlag)<HardEvent::(?P<event>\w+)>\((?P<id>[^;]*)\)"
                       r"|WaitFor<HardEvent::\w+>\([^;]*\)|PipeBarrier<PIPE_\w+>\(\)|SyncAll\(\));")
QUEUE_WAIT = re.compile(r"\b(?P<queue>\w+)\.(?P<op>DeQue|AllocTensor)<[^<>()]*>\(\)")
QUEUE_DECL = re.compile(r"TQue<QuePosition::(?P<pos>\w+),[^>]*>\s*&?\s*(?P<names>\w+(?:\s*,\s*\w+)*)")
FUNCTION = re.compile(r"__aicore__\s+inline\s+[^(;]*?\b(?P<name>\w+)\s*\(")
PRELUDE = """
#include <atomic>
#include <cstdio>
// The site switched off. Launches run in the twin's launch process, which loaded its own copy of the
// kernel, so the test cannot set a variable in it: each core reads the site from the file
// TWIN_MUTANT_FILE names when the entry starts (all cores read the same value).
static std::atomic<int> twin_mutant_site{-1};
static void TwinMutantLoad() {
    int k = -1;
    if (std::FILE *f = std::fopen(TWIN_MUTANT_FILE, "r")) {
        if (std::fscanf(f, "%d", &k) != 1) k = -1;
        std::fclose(f);
    }
    twin_mutant_site.store(k);
}
struct TwinMutantWait {
    explicit TwinMutantWait(bool drop) { ::twin::g_queue_wait_dropped = drop; }
    ~TwinMutantWait() { ::twin::g_queue_wait_dropped = false; }
};
#define TWIN_MUTANT_WAIT(k, call) ([&]() { TwinMutantWait drop((k) == twin_mutant_site); return call; }())
"""
ANCHOR = '#include "kernel_operator.h"\n'
TILING_READ = "GET_TILING_DATA_WITH_STRUCT("

# Queue flags no case can miss, because another handshake always comes first; the kernel cannot drop
# them without giving up the queue. label -> why.
REDUNDANT = {
    "rms_norm_backward_rstd.h: CopyInFor: FreeTensor/AllocTensor of its VECIN queues":
        "small cols takes an rstd batch buffer again right after the tile's dy and x buffers (CopyIn); a "
        "batch spans at least kSmallColsRstdBatchTiles = 4 tiles and the input queues are two deep, so "
        "the dy AllocTensor's V -> MTE2 flag already follows the vector unit's last read of the batch "
        "that buffer held (one handshake of CopyIn while the batcher lived there)",
}


def instrument(files: dict[str, str], site_file: Path) -> tuple[dict[str, str], dict[int, str]]:
    """The kernel sources with every sync site guarded (the site switched off read from `site_file`),
    and each site's description by number."""
    sites: dict[object, int] = {}
    labels: dict[int, str] = {}

    def site(key, label: str) -> int:
        if key not in sites:
            sites[key] = len(sites)
            labels[sites[key]] = label
        return sites[key]

    out = {}
    for name, text in sorted(files.items()):
        positions = {q.strip(): m["pos"] for m in QUEUE_DECL.finditer(text) for q in m["names"].split(",")}
        lines = []
        function = ""
        for number, line in enumerate(text.split("\n"), 1):
            code, sep, comment = line.partition("//")
            if (f := FUNCTION.search(code)) is not None:
                function = f["name"]

            def guard(m: re.Match) -> str:
                if m["flag"]:
                    key = (name, m["event"], m["id"].strip())
                    label = f"{name}: SetFlag/WaitFlag<HardEvent::{m['event']}>({m['id'].strip()})"
                else:
                    key, label = (name, number), f"{name}:{number}: {m[0]}"
                return f"if (twin_mutant_site != {site(key, label)}) {m[0]}"

            def wrap(m: re.Match) -> str:
                pair = "EnQue/DeQue" if m["op"] == "DeQue" else "FreeTensor/AllocTensor"
                pos = positions.get(m["queue"], "?")
                k = site((name, function, m["op"], pos), f"{name}: {function}: {pair} of its {pos} queues")
                return f"TWIN_MUTANT_WAIT({k}, {m[0]})"

            lines.append(QUEUE_WAIT.sub(wrap, STATEMENT.sub(guard, code)) + sep + comment)
        out[name] = "\n".join(lines)
    assert out[COMMON].count(ANCHOR) == 1, f"op_kernel/{COMMON} must include kernel_operator.h once"
    out[COMMON] = out[COMMON].replace(
        ANCHOR, ANCHOR + f"#define TWIN_MUTANT_FILE {json.dumps(str(site_file))}\n" + PRELUDE)
    entry = simulate_module.KERNEL_SOURCE.name
    assert out[entry].count(TILING_READ) == 1, f"op_kernel/{entry} must read its tiling once ({TILING_READ})"
    start = out[entry].index(TILING_READ)
    end = out[entry].index(";", start) + 1
    out[entry] = out[entry][:end] + "\n    TwinMutantLoad();" + out[entry][end:]
    return out, labels


class Case(NamedTuple):
    dtype: str
    shape: tuple
    path: str
    block_dim: int | None = None  # fewer cores than row groups: several groups per core
    offset: float = 0.0           # gamma_offset
    dres: bool = False            # the fused add-RMSNorm form
    gamma: bool = True            # False: the form without gamma
    gamma_fp32: bool = False      # a float32 gamma beside 16-bit data


# Every path variant (see tests/kernel/test_exact_and_tails.py), and row groups reduced after SyncAll.
CASES = [
    Case("float16", (37, 13), "small_cols"), Case("float32", (20, 64), "small_cols"),
    Case("bfloat16", (9, 700), "small_cols"), Case("float32", (600, 40), "small_cols", 2),
    # groups of several tiles: the dx queue's buffers are taken again within a group
    Case("float32", (20000, 40), "small_cols"), Case("float16", (20000, 40), "small_cols"),
    Case("float32", (5, 1001), "rows_in_ub"), Case("float16", (5, 2049), "rows_in_ub"),
    Case("float32", (300, 1000), "rows_in_ub", 2),
    Case("float32", (3, 4097), "long_rows"), Case("float16", (3, 8193), "long_rows"),
    Case("bfloat16", (3, 12287), "long_rows"), Case("float16", (340, 4100), "long_rows", 2),
    Case("float32", (96, 12289), "long_rows"),  # dgamma through the GM partial, two rows a group
    Case("float32", (96, 13313), "long_rows"),  # gamma in chunks shared by pass 2 and the next row's pass 1
    Case("bfloat16", (96, 14337), "long_rows"),  # pass 2 beside the next row's pass 1, dgamma through GM
    Case("float32", (3, 17409), "long_rows_streamed"), Case("float32", (2, 32769), "long_rows_streamed"),
    Case("float16", (2, 65537), "long_rows_streamed"), Case("float16", (200, 20001), "long_rows_streamed", 1),
    # No rows: a group that owes zeros for dgamma, on each path.
    Case("float32", (0, 13), "small_cols"), Case("float16", (0, 1000), "rows_in_ub"),
    Case("float16", (0, 8193), "long_rows"), Case("float32", (0, 4097), "long_rows"),
    Case("float32", (0, 12289), "long_rows"),
    Case("float32", (0, 13313), "long_rows"),
    Case("float32", (0, 17409), "long_rows_streamed"), Case("float16", (0, 65537), "long_rows_streamed"),
    # The forms, last (a site the cases above catch never reaches them): fp32 gamma taking its offset
    # once, dres's queues on every path and store, no gamma.
    Case("float32", (3, 4097), "long_rows", offset=1.0), Case("float32", (3, 17409), "long_rows_streamed", offset=1.0),
    Case("float32", (3, 13313), "long_rows", offset=1.0), Case("float32", (5, 1001), "rows_in_ub", offset=1.0),
    Case("float16", (37, 13), "small_cols", dres=True), Case("float32", (300, 40), "small_cols", 2, dres=True),
    Case("float32", (5, 1001), "rows_in_ub", dres=True), Case("float16", (300, 1000), "rows_in_ub", 2, dres=True),
    Case("float32", (3, 4000), "long_rows", dres=True), Case("float32", (3, 7250), "long_rows", dres=True),
    Case("float16", (3, 4250), "long_rows", dres=True), Case("float32", (3, 17409), "long_rows_streamed", dres=True),
    Case("float32", (3, 13313), "long_rows", dres=True),
    Case("float32", (96, 12288), "long_rows", dres=True),
    Case("float16", (2, 65537), "long_rows_streamed", dres=True),
    Case("float16", (37, 13), "small_cols", gamma=False), Case("float32", (5, 1001), "rows_in_ub", gamma=False),
    Case("float16", (3, 8193), "long_rows", gamma=False), Case("float32", (3, 12289), "long_rows", gamma=False),
    Case("float16", (37, 13), "small_cols", gamma_fp32=True), Case("bfloat16", (5, 2049), "rows_in_ub", offset=1.0, gamma_fp32=True),
    Case("float16", (3, 8193), "long_rows", offset=1.0, gamma_fp32=True),
    Case("float16", (2, 20001), "long_rows_streamed", offset=1.0, gamma_fp32=True),
    Case("float16", (2, 65537), "long_rows_streamed", offset=1.0, gamma_fp32=True),
]
# The paths each kernel file serves; the entry and the reduction run after several row groups.
PATHS = {
    "rms_norm_backward_small_cols.h": {"small_cols"}, "rms_norm_backward_packed_rows.h": {"small_cols"},
    "rms_norm_backward_rows_in_ub.h": {"rows_in_ub"},
    "rms_norm_backward_long_rows.h": {"long_rows"}, "rms_norm_backward_long_rows_streamed.h": {"long_rows_streamed"},
    "rms_norm_backward_long_rows_ring.h": {"long_rows"}, "rms_norm_backward_long_rows_store.h": {"long_rows"},
    "rms_norm_backward_dgamma_partial.h": {"long_rows", "long_rows_streamed"},
    "rms_norm_backward_rstd.h": {"long_rows", "long_rows_streamed", "small_cols"},
    "rms_norm_backward_chunk_math.h": {"long_rows", "long_rows_streamed"},
    "rms_norm_backward_chunk_gamma.h": {"long_rows"},
}


def cases_for(label: str) -> list[Case]:
    file = label.split(":")[0]
    if file in PATHS:
        return [c for c in CASES if c.path in PATHS[file]]
    if file in (ENTRY, "rms_norm_backward_dgamma.h"):
        return [c for c in CASES if c.block_dim is not None]
    return CASES


def inputs(case: Case):
    rng = np.random.default_rng(11)
    dy, x, rstd, gamma = make_inputs(rng, case.shape, 1, case.dtype, gamma_offset=case.offset,
                                     gamma_dtype="float32" if case.gamma_fp32 else None, no_gamma=not case.gamma)
    return dy, x, rstd, gamma, make_dres(rng, x) if case.dres else None


def failure(case: Case) -> str | None:
    """Why the launch of `case` failed (a rule, the input check, the golden), or None."""
    dy, x, rstd, gamma, dres = inputs(case)
    try:
        dx, dgamma, stats = simulate_module.simulate(dy, x, rstd, gamma, dres, gamma_offset=case.offset,
                                                     block_dim=case.block_dim)
    except KernelRuleError as e:
        return str(e)
    except InputChanged as e:
        return str(e)
    assert stats["path"] == case.path, f"{case} now takes the {stats['path']} path"
    golden_dx, golden_dgamma = golden(dy, x, rstd, gamma, case.offset, dres)
    if not (compare(dx, golden_dx, case.dtype).passed and
            compare(dgamma, golden_dgamma, "float32", round_golden=False).passed):
        return "the golden"
    return None


class MutantSite:
    """The site the instrumented kernel switches off at its next launch (-1: none), kept in a file."""

    def __init__(self, path: Path):
        self.path = path
        self.value = -1

    @property
    def value(self) -> int:
        return int(self.path.read_text())

    @value.setter
    def value(self, k: int) -> None:
        self.path.write_text(f"{k}\n")


@pytest.fixture(scope="module")
def instrumented(monkeypatch_module, tmp_path_factory):
    """(the instrumented kernel's MutantSite, site labels); simulate runs that kernel."""
    files = {p.name: p.read_text() for p in KERNEL_DIR.iterdir() if p.is_file()}
    site = MutantSite(tmp_path_factory.mktemp("sync_removal") / "site")
    text, labels = instrument(files, site.path)
    entry = kernel_copy("sync_removal", text)
    compile_kernel(entry, simulate_module.KERNEL_NAME, include_dirs=[entry.parent])
    monkeypatch_module.setattr(simulate_module, "KERNEL_SOURCE", entry)
    yield site, labels
    site.value = -1


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_the_parser_finds_every_kind_of_site(instrumented):
    _, labels = instrumented
    text = "\n".join(labels.values())
    for kind in ("SetFlag/WaitFlag<HardEvent::", "WaitFor<HardEvent::", "SyncAll()", "EnQue/DeQue",
                 "FreeTensor/AllocTensor"):
        assert kind in text, f"no {kind} site found in op_kernel/: the parser no longer matches the kernel"


def test_the_instrumented_kernel_passes_every_case(instrumented):
    site, _ = instrumented
    site.value = -1
    assert [(c, why) for c in CASES if (why := failure(c)) is not None] == []


def test_removing_any_one_sync_is_caught(instrumented):
    site, labels = instrumented
    missed = []
    for k, label in labels.items():
        site.value = k
        if not any(failure(c) is not None for c in cases_for(label)):
            missed.append(label)
    site.value = -1
    assert sorted(missed) == sorted(REDUNDANT), ("syncs whose removal no case notices (a twin gap, or a sync the "
                                                "kernel does not need):\n" + "\n".join(missed))
