# SPDX-License-Identifier: BSD-3-Clause
"""run_kernel's safety: a launch that never ends stops at its timeout and on Ctrl-C, a kernel that
dies of a fatal signal raises KernelCrashError, and the caller carries on after each.

One kernel misbehaves in the way GM says, on the core GM names; the others return at once. Both
kernels compile at -O0 (run_kernel's optimize): what is tested is the launch, not the code's speed.
"""
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ascendc_twin.errors import InvalidInputError, KernelCrashError, TwinTimeoutError
from ascendc_twin import compile_kernel, gm_empty, run_kernel

SPIN, NULL_WRITE, ABORT, EXIT = range(4)

MISBEHAVE = """#include "kernel_operator.h"
#include <cstdlib>
using namespace AscendC;

extern "C" __global__ __aicore__ void misbehave(GM_ADDR how, GM_ADDR nothing)
{
    GlobalTensor<int32_t> h;
    h.SetGlobalBuffer((__gm__ int32_t *)how, 2);
    const int32_t what = h.GetValue(0), culprit = h.GetValue(1);
    if (int32_t(GetBlockIdx()) != culprit) {
        return;
    }
    if (what == 0) {  // loops without calling the twin: nothing cooperative can stop it
        volatile uint64_t spins = 0;
        for (;;) {
            spins = spins + 1;
        }
    }
    if (what == 1) {
        *(__gm__ volatile int32_t *)nothing = 1;  // `nothing` is a null GM_ADDR
    }
    if (what == 2) {
        abort();
    }
    exit(3);
}
"""

# Each core of the well-behaved kernel writes its block index into its own slot.
WELL = """#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void well(GM_ADDR out)
{
    GlobalTensor<int32_t> o;
    o.SetGlobalBuffer((__gm__ int32_t *)out + GetBlockIdx(), 1);
    o.SetValue(0, int32_t(GetBlockIdx()) + 100);
}
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """The two kernel sources, compiled before any test times a launch."""
    root = tmp_path_factory.mktemp("safety")
    sources = {}
    for name, text in (("misbehave", MISBEHAVE), ("well", WELL)):
        sources[name] = root / f"{name}.cpp"
        sources[name].write_text(text)
        compile_kernel(sources[name], name, optimize=False)
    return sources


def misbehave(kernels, what: int, culprit: int, **options):
    return run_kernel(kernels["misbehave"], "misbehave", [np.array([what, culprit], np.int32), None],
                      block_dim=4, optimize=False, **options)


def children() -> dict[int, str]:
    """This process's child processes: pid -> state letter (Z: a zombie nobody reaped)."""
    pids = set()
    for task in Path("/proc/self/task").iterdir():
        pids.update(int(p) for p in (task / "children").read_text().split())
    states = {}
    for pid in pids:
        try:
            states[pid] = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:  # ended while we looked
            pass
    return states


def assert_caller_carries_on(kernels, rng):
    """A normal launch right after works, and no child was left unreaped."""
    block_dim = int(rng.integers(1, 9))
    out = np.full(block_dim, -1, np.int32)
    stats = run_kernel(kernels["well"], "well", [out], block_dim=block_dim, optimize=False)
    np.testing.assert_array_equal(out, np.arange(block_dim) + 100)
    assert stats.total["gm_scalar_writes"] == block_dim
    assert "Z" not in children().values()


def test_a_kernel_that_never_ends_stops_at_its_timeout(kernels, rng):
    timeout = float(rng.uniform(0.3, 0.8))
    start = time.monotonic()
    with pytest.raises(TwinTimeoutError, match=rf"did not finish within {timeout:g} s"):
        misbehave(kernels, SPIN, int(rng.integers(0, 4)), timeout=timeout)
    elapsed = time.monotonic() - start
    assert timeout <= elapsed < timeout + 5  # loose above: the machine may be busy, never early
    assert_caller_carries_on(kernels, rng)


def test_ctrl_c_stops_a_kernel_that_never_ends(kernels, rng):
    # Python's own Ctrl-C handler, as in an interactive session: a background shell or a test worker
    # may have started this process with SIGINT ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        ctrl_c_interrupts_the_launch(kernels, rng)
    finally:
        signal.signal(signal.SIGINT, previous)


def ctrl_c_interrupts_the_launch(kernels, rng):
    delay = float(rng.uniform(0.2, 0.6))
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            misbehave(kernels, SPIN, int(rng.integers(0, 4)), timeout=60)
    finally:
        timer.cancel()
    assert delay <= time.monotonic() - start < delay + 5
    assert_caller_carries_on(kernels, rng)


@pytest.mark.parametrize("what, sig, text", [
    (NULL_WRITE, signal.SIGSEGV, r"SIGSEGV \(Segmentation fault\) at address 0x0 \(a null or wild pointer\)"),
    (ABORT, signal.SIGABRT, r"SIGABRT \(Aborted\)"),
])
def test_a_fatal_signal_is_a_crash_error_naming_the_core(kernels, rng, what, sig, text):
    culprit = int(rng.integers(0, 4))
    with pytest.raises(KernelCrashError, match=rf"^core {culprit}: the kernel crashed with {text}; the caller carries on$") as info:
        misbehave(kernels, what, culprit)
    assert info.value.signal == sig and info.value.core == culprit
    assert_caller_carries_on(kernels, rng)


def test_a_kernel_that_exits_is_a_crash_error_with_its_status(kernels, rng):
    with pytest.raises(KernelCrashError, match="exit status 3") as info:
        misbehave(kernels, EXIT, int(rng.integers(0, 4)))
    assert info.value.signal is None and info.value.core is None
    assert_caller_carries_on(kernels, rng)


@pytest.mark.parametrize("timeout", [0, -1.5, float("inf"), float("nan"), "10", True])
def test_timeout_must_be_a_positive_number_or_none(kernels, timeout):
    with pytest.raises(InvalidInputError, match="timeout must be a positive number of seconds or None"):
        run_kernel(kernels["well"], "well", [np.zeros(1, np.int32)], timeout=timeout, optimize=False)


def test_no_timeout_lets_a_launch_finish(kernels):
    out = np.zeros(8, np.int32)
    run_kernel(kernels["well"], "well", [out], block_dim=8, timeout=None, optimize=False)
    np.testing.assert_array_equal(out, np.arange(8) + 100)


def test_a_forked_caller_gets_its_own_gm_memory_and_launch_processes(kernels):
    """GM memory is shared with the launch processes only: a child of os.fork (a fork-started
    DataLoader worker, say) writes its own copy of a gm array and launches through its own."""
    out = gm_empty(8, np.int32)
    run_kernel(kernels["well"], "well", [out], block_dim=8, optimize=False)
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 3
        try:
            out[:] = -7
            mine = gm_empty(4, np.int32)
            run_kernel(kernels["well"], "well", [mine], block_dim=4, optimize=False)
            code = 0 if mine.tolist() == [100, 101, 102, 103] else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    np.testing.assert_array_equal(out, np.arange(8) + 100)
