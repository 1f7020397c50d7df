# SPDX-License-Identifier: BSD-3-Clause
"""Builds rmsnorm_backward_npu_adapter, the NPU kernel of torch.ops.rmsnorm_backward.rms_norm_backward.

Needs CANN (ASCEND_HOME_PATH set by its set_env.sh), torch, torch_npu and the rmsnorm_backward
package (for op_def); refuses with one sentence when one is missing. Build and install, from the
repository root:

    source <CANN>/set_env.sh
    pip install --no-build-isolation framework/torch_npu_adapter

At run time the adapter finds libcust_opapi.so of the installed operator package through
ASCEND_CUSTOM_OPP_PATH (source the package's set_env.bash) or under ASCEND_OPP_PATH/vendors.
"""
import glob
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def refuse(reason: str):
    sys.exit(f"rmsnorm_backward NPU adapter: {reason}")


def main():
    cann = os.environ.get("ASCEND_HOME_PATH")
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)  # setuptools' own help follows where the build can run
        if not cann:
            return
    if not cann:
        refuse("ASCEND_HOME_PATH is not set; source CANN's set_env.sh first (the adapter calls aclnn)")
    for module in ("torch", "torch_npu", "rmsnorm_backward"):
        if importlib.util.find_spec(module) is None:
            refuse(f"Python package {module} is not installed; the adapter is built against it "
                   "(use pip install --no-build-isolation so the build sees it)")

    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension
    from torch_npu.utils.cpp_extension import NpuExtension

    from rmsnorm_backward import op_def
    from rmsnorm_backward.npu_adapter import NPU_ADAPTER

    op = op_def.load()
    ext = NpuExtension(
        name=NPU_ADAPTER,
        sources=sorted(glob.glob(os.path.join(HERE, "csrc", "*.cpp"))),
        # op_host/op_api and op_host: the aclnn header and the dtype table generated from op_def
        # (`rmsnorm-backward gen`).
        include_dirs=[os.path.join(HERE, "csrc"), os.path.join(REPO, "op_host", "op_api"), os.path.join(REPO, "op_host"),
                      os.path.join(cann, "include")],
        library_dirs=[os.path.join(cann, "lib64")],
        libraries=["ascendcl", "nnopbase"],
        # A bare identifier, stringified in the source: quotes would not survive ninja's shell.
        define_macros=[("RMSNB_VENDOR", op.vendor)],
    )
    setup(
        name="rmsnorm-backward-npu-adapter",
        version="0.1.0",
        description=f"NPU kernel (aclnn{op.type}) of torch.ops.rmsnorm_backward.rms_norm_backward",
        ext_modules=[ext],
        cmdclass={"build_ext": BuildExtension},
    )


if __name__ == "__main__":
    main()
