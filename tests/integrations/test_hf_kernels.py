# SPDX-License-Identifier: BSD-3-Clause
"""The operator as a Hugging Face `kernels` layer: a tiny model kernelized for training on "cpu" (the
CPU twin standing in for "npu") runs this operator and trains as the unpatched one."""
import copy

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
pytest.importorskip("transformers", reason="transformers is not installed (./build.sh setup installs it)")
kernels = pytest.importorskip("kernels", reason="kernels is not installed (a test-only dependency: ./build.sh setup "
                                                "installs it)")

from rmsnorm_backward.integrations.hf_kernels import kernel_mapping  # noqa: E402

from hf_models import OperatorCalls, one_thread, tiny, token_ids, trains_as_unpatched  # noqa: E402,F401


def _kernelized(model, mode):
    kernelized = copy.deepcopy(model)
    with kernels.use_kernel_mapping(kernel_mapping(devices=("cpu", "npu")), inherit_mapping=False):
        kernels.kernelize(kernelized, mode=mode, device="cpu")
    return kernelized


def test_a_kernelized_model_trains_as_unpatched(rng):
    model = tiny("qwen3", rng)
    kernelized = _kernelized(model, kernels.Mode.TRAINING)
    ids = token_ids(rng)
    with OperatorCalls() as mode:
        kernelized(ids, labels=ids).loss.backward()
    norms = sum(type(m).__name__ == "Qwen3RMSNorm" for m in model.modules())
    assert mode.calls == {"rms_norm": norms, "rms_norm_backward": norms}
    kernelized.zero_grad()
    trains_as_unpatched(model, kernelized, ids, 5)


def test_a_kernelized_model_compiles_fullgraph(rng):
    model = tiny("llama", rng)
    kernelized = _kernelized(model, kernels.Mode.TRAINING | kernels.Mode.TORCH_COMPILE)
    compiled = torch.compile(kernelized, backend="aot_eager", fullgraph=True)
    trains_as_unpatched(model, compiled, token_ids(rng), 2)
