# SPDX-License-Identifier: BSD-3-Clause
"""The name of the C++ extension that registers the NPU kernel with torch (framework/torch_npu_adapter,
built only where torch_npu is): backends says whether it is built, torch/_npu loads it. A module of
its own so that neither of those imports the other."""
NPU_ADAPTER = "rmsnorm_backward_npu_adapter"
