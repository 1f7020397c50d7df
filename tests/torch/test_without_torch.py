# SPDX-License-Identifier: BSD-3-Clause
"""torch is never a hard dependency: the package imports without it, the torch front end says why not."""
import subprocess
import sys
import textwrap


def run_without_torch(code: str) -> subprocess.CompletedProcess:
    # sys.modules["torch"] = None makes every `import torch` fail, as on a machine without PyTorch.
    prelude = "import sys\nsys.modules['torch'] = None\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)


def test_package_imports_and_computes_without_torch():
    r = run_without_torch("""
        import numpy as np
        import rmsnorm_backward
        from rmsnorm_backward import compare
        from rmsnorm_backward.golden import golden
        dx, dgamma = golden(np.ones((2, 8)), np.ones((2, 8)), np.ones(2, np.float32), np.ones(8))
        assert compare(dx.astype(np.float32), dx, "float32").passed
    """)
    assert r.returncode == 0, r.stderr


def test_torch_front_end_explains_what_is_missing():
    r = run_without_torch("import rmsnorm_backward.torch")
    assert r.returncode != 0
    assert "rmsnorm_backward.torch needs PyTorch" in r.stderr
