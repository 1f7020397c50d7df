# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the 2-process gloo tests (test_distributed.py starts two): DDP, FSDP1 and FSDP2 training of a
patched tiny Llama on half the batch each, SequenceParallel and DTensor row sharding of the operators.
Each scenario also runs unsharded in this process; every result is saved for the test to compare.

    python distributed_worker.py RANK WORLD_SIZE INIT_FILE SEED OUT
"""
from __future__ import annotations

import contextlib
import copy
import sys

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate, Shard

from rmsnorm_backward.integrations import patch_model
from rmsnorm_backward.torch import RMSNorm, add_rms_norm

from hf_models import tiny, token_ids

STEPS = 3


def train(model, ids, steps=STEPS):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(steps):
        loss = model(ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses)


def mean_over_ranks(t: torch.Tensor) -> torch.Tensor:
    t = t.clone()
    dist.all_reduce(t)
    return t / dist.get_world_size()


def full(t: torch.Tensor) -> torch.Tensor:
    return t.full_tensor() if isinstance(t, DTensor) else t


def gathered(wrapped):
    """FSDP1 keeps each rank's shard of a flat parameter: the whole parameters inside this."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    if isinstance(wrapped, FullyShardedDataParallel):
        return FullyShardedDataParallel.summon_full_params(wrapped)
    return contextlib.nullcontext()


def data_parallel(rng, rank, world, wrap):
    """(losses, params) of `wrap`-ped training on this rank's half of the batch, and of one process
    on the whole batch."""
    model = patch_model(tiny("llama", rng))
    ids = token_ids(rng, batch=2 * world)
    reference = copy.deepcopy(model)
    wrapped = wrap(model)
    losses = mean_over_ranks(train(wrapped, ids.chunk(world)[rank]))
    with gathered(wrapped):
        params = {n: full(p.detach()).clone() for n, p in model.named_parameters()}
    return {"losses": losses, "params": params, "ref_losses": train(reference, ids),
            "ref_params": {n: p.detach() for n, p in reference.named_parameters()}}


def ddp(rng, rank, world):
    return data_parallel(rng, rank, world, torch.nn.parallel.DistributedDataParallel)


def fsdp2(rng, rank, world):
    from torch.distributed.fsdp import fully_shard

    def wrap(model):
        for layer in model.model.layers:
            fully_shard(layer)
        return fully_shard(model)

    return data_parallel(rng, rank, world, wrap)


def fsdp1(rng, rank, world):
    from torch.distributed.fsdp import FullyShardedDataParallel

    return data_parallel(rng, rank, world, lambda model: FullyShardedDataParallel(model, use_orig_params=True,
                                                                                device_id=torch.device("cpu")))


def sequence_parallel(rng, rank, world):
    """RMSNorm under SequenceParallel and add_rms_norm on DTensors sharded on the sequence dim,
    against the same on whole tensors."""
    from torch.distributed.tensor.parallel import SequenceParallel, parallelize_module

    mesh = init_device_mesh("cpu", (world,))
    x, r, dy, ds = (torch.from_numpy(rng.standard_normal((2, 4 * world, 64))).float() for _ in range(4))
    w = torch.from_numpy(rng.standard_normal(64)).float()
    out = {}
    norm = RMSNorm(64, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(w)
    sharded = parallelize_module(copy.deepcopy(norm), mesh, SequenceParallel())
    for name, module, shard in (("ref_norm", norm, lambda t: t), ("norm", sharded, lambda t: t.chunk(world, 1)[rank])):
        xi = shard(x).clone().requires_grad_()
        y = module(xi)
        (full(y) * dy).sum().backward()
        out[name] = {"y": full(y).detach(), "dx": xi.grad, "dw": full(module.weight.grad)}
    place = {"local": lambda t: t, "dtensor": lambda t: DTensor.from_local(t.chunk(world, 1)[rank], mesh, [Shard(1)])}
    for name, make in place.items():
        leaves = [make(t.clone()).detach().requires_grad_() for t in (x, r)]
        wi = (w.clone() if name == "local" else DTensor.from_local(w.clone(), mesh, [Replicate()])).requires_grad_()
        y, s = add_rms_norm(*leaves, wi)
        ((full(y) * dy).sum() + (full(s) * ds).sum()).backward()
        out[f"fused_{name}"] = {"y": full(y).detach(), "s": full(s).detach(), "dx": full(leaves[0].grad),
                                "dres": full(leaves[1].grad), "dw": full(wi.grad)}
    return out


def main(rank: int, world: int, init_file: str, seed: int, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        results = {f.__name__: f(np.random.default_rng([seed, i]), rank, world)
                   for i, f in enumerate((ddp, fsdp1, fsdp2, sequence_parallel))}
    finally:
        dist.destroy_process_group()
    torch.save(results, out)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])
