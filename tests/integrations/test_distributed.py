# SPDX-License-Identifier: BSD-3-Clause
"""Two gloo processes on this machine (distributed_worker.py): DDP, FSDP1 and FSDP2 training of a patched
tiny Llama match one process on the whole batch; SequenceParallel of RMSNorm and add_rms_norm on
sequence-sharded DTensors match the unsharded run (y and dx bit for bit, dgamma a sum in another order)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ascendc_twin.testing import SEED

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
pytest.importorskip("transformers", reason="transformers is not installed (./build.sh setup installs it)")
if not torch.distributed.is_available():
    pytest.skip("this torch has no torch.distributed", allow_module_level=True)

from rmsnorm_backward.precision import compare  # noqa: E402

WORLD = 2
WORKER = Path(__file__).with_name("distributed_worker.py")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """Each rank's results, the two processes run once for the module."""
    tmp = tmp_path_factory.mktemp("gloo")
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    seed = str(SEED)
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(rank), str(WORLD), str(tmp / "init"), seed,
                               str(tmp / f"rank{rank}.pt")], cwd=WORKER.parent, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in range(WORLD)]
    try:
        logs = [p.communicate(timeout=300)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    for rank, (p, log) in enumerate(zip(procs, logs)):
        assert p.returncode == 0, f"rank {rank}:\n{log[-3000:]}"
    return [torch.load(tmp / f"rank{rank}.pt") for rank in range(WORLD)]


def assert_standard(actual: torch.Tensor, reference: torch.Tensor, what: str) -> None:
    report = compare(actual.numpy(), reference.double().numpy(), "float32", round_golden=False)
    assert report.passed, f"{what}: {report}"


@pytest.mark.parametrize("scenario", ["ddp", "fsdp1", "fsdp2"])
def test_data_parallel_matches_one_process(ranks, scenario):
    for rank in ranks:
        run = rank[scenario]
        relative = ((run["losses"] - run["ref_losses"]).abs() / run["ref_losses"]).max().item()
        assert relative <= 1e-6, relative
        assert run["params"].keys() == run["ref_params"].keys()
        for name, p in run["params"].items():
            assert_standard(p, run["ref_params"][name], name)


def test_sequence_parallel_matches_the_unsharded_run(ranks):
    for rank_id, rank in enumerate(ranks):
        sp = rank["sequence_parallel"]
        for sharded, whole in ((sp["norm"], sp["ref_norm"]), (sp["fused_dtensor"], sp["fused_local"])):
            assert torch.equal(sharded["y"], whole["y"])
            for name in sharded.keys() - {"y", "dw"}:  # dx and dres of this rank's rows, or gathered
                expected = whole[name] if sharded[name].shape == whole[name].shape else whole[name].chunk(WORLD, 1)[rank_id]
                assert torch.equal(sharded[name], expected), name
            assert_standard(sharded["dw"], whole["dw"], "dgamma")
