# SPDX-License-Identifier: BSD-3-Clause
"""torch.compile(fullgraph=True) of a small model with RMSNorm, forward and backward, against eager."""
import copy

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from rmsnorm_backward.torch import RMSNorm  # noqa: E402

from torch_helpers import randn  # noqa: E402


def test_compiled_model_matches_eager(rng):
    eager = torch.nn.Sequential(torch.nn.Linear(24, 40), RMSNorm(40), torch.nn.GELU(), torch.nn.Linear(40, 8))
    with torch.no_grad():
        eager[1].weight.copy_(randn(rng, (40,)))
    compiled_model = copy.deepcopy(eager)
    compiled = torch.compile(compiled_model, fullgraph=True)
    x = randn(rng, (2, 5, 24))
    dy = randn(rng, (2, 5, 8))
    outputs = []
    for model, m in ((eager, eager), (compiled, compiled_model)):
        xi = x.clone().requires_grad_()
        y = model(xi)
        y.backward(dy)
        outputs.append((y.detach(), xi.grad, *(p.grad for p in m.parameters())))
    for e, c in zip(*outputs):
        torch.testing.assert_close(c, e, rtol=1e-4, atol=1e-5)
