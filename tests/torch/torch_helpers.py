# SPDX-License-Identifier: BSD-3-Clause
"""Shared by the torch tests: random tensors from the suite's seeded NumPy generator, comparisons."""
import numpy as np
import torch

from rmsnorm_backward import op_def
from rmsnorm_backward.precision import compare
from rmsnorm_backward.torch._bridge import to_numpy

# The operator's dtypes (the values of op_def's T) as torch dtypes, by op_def name.
DTYPES = {d.name: getattr(torch, d.name) for d in op_def.load().type_values}


def randn(rng: np.random.Generator, shape, dtype=torch.float32) -> torch.Tensor:
    return torch.from_numpy(rng.standard_normal(shape)).to(dtype)


def rstd_of(x: torch.Tensor, k: int, eps: float = 1e-6, keepdim: bool = True) -> torch.Tensor:
    """The forward pass's rstd in fp32, as the device computes it."""
    dims = tuple(range(x.ndim - k, x.ndim))
    return torch.rsqrt(x.float().square().mean(dims, keepdim=keepdim) + eps)


def assert_precise(actual: torch.Tensor, golden, *, what: str, round_golden: bool = True) -> None:
    """docs/design.md section 4 standard for `actual`'s dtype against a float64 golden."""
    golden = golden.detach().numpy() if isinstance(golden, torch.Tensor) else golden
    report = compare(to_numpy(actual), golden, str(actual.dtype).removeprefix("torch."),
                     round_golden=round_golden)
    assert report.passed, f"{what}: {report}"
