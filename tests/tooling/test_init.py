"""The package's lazy re-exports: importable without torch or the compiled extension, and the
exported names stay the functions even after their modules (same names) are imported; a file the
install lacks is the environment's fault."""
import subprocess
import sys

import pytest

import rmsnorm_backward


def python_stdout(code: str) -> str:
    """What `code` prints in a fresh interpreter, which must exit 0."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_needs_neither_torch_nor_the_extension():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"              # any import of torch now fails
        "sys.modules['ascendc_twin._twin'] = None\n"
        "sys.modules['rmsnorm_backward._tiling'] = None\n"
        "import numpy as np, rmsnorm_backward as r\n"
        "dx, dg = r.golden(np.ones((2, 4)), np.ones((2, 4)), np.ones((2, 1)), np.ones(4))\n"
        "print(r.compare(dx.astype(np.float32), dx, 'fp32').passed, 'torch' in sys.modules and sys.modules['torch'])\n"
    )
    assert python_stdout(code).strip() == "True None"
    assert {"golden", "compare", "simulate", "run_kernel"} <= set(rmsnorm_backward.__all__)


def test_exports_are_the_functions_even_after_their_modules_are_imported():
    import rmsnorm_backward.golden  # noqa: F401  a submodule named like its function
    import rmsnorm_backward.simulate  # noqa: F401

    from rmsnorm_backward.golden import golden
    from rmsnorm_backward.precision import compare
    from rmsnorm_backward.simulate import simulate
    from ascendc_twin import run_kernel

    assert rmsnorm_backward.golden is golden
    assert rmsnorm_backward.simulate is simulate
    assert rmsnorm_backward.compare is compare
    assert rmsnorm_backward.run_kernel is run_kernel


def test_unknown_attribute_is_an_attribute_error():
    try:
        rmsnorm_backward.no_such_name
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("expected AttributeError")


def test_a_file_missing_from_the_install_is_an_environment_error_naming_it():
    from rmsnorm_backward import resources
    from rmsnorm_backward.errors import EnvironmentSetupError

    with pytest.raises(EnvironmentSetupError, match=r"op_kernel/no_such_kernel\.cpp is missing from the source checkout"):
        resources.path("op_kernel/no_such_kernel.cpp")


def test_a_missing_extension_is_an_environment_error_saying_how_to_build_it():
    code = (
        "import sys\n"
        "sys.modules['rmsnorm_backward._tiling'] = None\n"
        "from rmsnorm_backward.errors import EnvironmentSetupError\n"
        "from rmsnorm_backward import preflight\n"
        "try:\n"
        "    preflight.tiling({'dy': [2, 4], 'x': [2, 4], 'rstd': [2, 1], 'gamma': [4]}, dict.fromkeys(('dy', 'x', 'rstd', 'gamma'), 'float32'))\n"
        "except EnvironmentSetupError as e:\n"
        "    print(e)\n"
    )
    out = python_stdout(code)
    assert "rmsnorm_backward._tiling is not importable" in out and "./build.sh setup" in out
