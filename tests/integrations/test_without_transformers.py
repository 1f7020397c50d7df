# SPDX-License-Identifier: BSD-3-Clause
"""transformers is a test dependency only: the package, its torch front end and the integrations
import without it, and patch_model says what it found."""
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")


def test_the_integrations_import_without_transformers():
    code = """
        import sys
        sys.modules["transformers"] = None  # every `import transformers` fails, as where it is not installed
        import torch
        import rmsnorm_backward.torch
        from rmsnorm_backward.errors import InvalidInputError
        from rmsnorm_backward.integrations import patch_model
        try:
            patch_model(torch.nn.Sequential(torch.nn.Linear(4, 4)))
        except InvalidInputError as e:
            print(e)
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Sequential has no RMSNorm rmsnorm_backward.integrations patches")
