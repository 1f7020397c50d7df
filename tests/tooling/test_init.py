# SPDX-License-Identifier: BSD-3-Clause
"""The package's lazy re-exports: importable without torch or the compiled extensions, no export
named like a submodule (a submodule is always its module); a file the install lacks is the
environment's fault."""
import subprocess
import sys
from pathlib import Path

import pytest

import rmsnorm_backward


def python_stdout(code: str) -> str:
    """What `code` prints in a fresh interpreter, which must exit 0."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


PACKAGE = Path(rmsnorm_backward.__file__).parent


def test_import_needs_neither_torch_nor_the_extension():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"              # any import of torch now fails
        "sys.modules['ascendc_twin._twin'] = None\n"
        "sys.modules['rmsnorm_backward._tiling'] = None\n"
        "import numpy as np, rmsnorm_backward as r, rmsnorm_backward.golden\n"
        "dx, dg = r.golden.golden(np.ones((2, 4)), np.ones((2, 4)), np.ones((2, 1)), np.ones(4))\n"
        "print(r.compare(dx.astype(np.float32), dx, 'fp32').passed, 'torch' in sys.modules and sys.modules['torch'])\n"
    )
    assert python_stdout(code).strip() == "True None"
    assert {"compare", "rms_norm", "RMSNorm"} == set(rmsnorm_backward.__all__)


def test_the_operators_errors_and_npu_path_need_no_twin():
    """The operator owns its errors; only the twin backend (rmsnorm_backward.twin) imports ascendc_twin."""
    code = (
        "import sys\n"
        "sys.modules['ascendc_twin'] = None\n"      # any import of the twin now fails
        "import rmsnorm_backward.errors as e, rmsnorm_backward.backends, rmsnorm_backward.attrs\n"
        "import rmsnorm_backward.torch._npu\n"
        "print(e.TilingError.__mro__[1].__name__, e.KernelRuleError.__module__)\n"
    )
    assert python_stdout(code).strip() == "InvalidInputError rmsnorm_backward.errors"


def test_a_twin_error_crosses_into_the_operator_as_its_own():
    from ascendc_twin import errors as twin_errors

    from rmsnorm_backward import errors, twin

    crash = twin.translate(twin_errors.KernelCrashError("core 3: SIGSEGV", signal=11, core=3))
    assert type(crash) is errors.KernelCrashError and (crash.signal, crash.core) == (11, 3)
    for theirs, ours in ((twin_errors.TwinRuleError, errors.KernelRuleError),
                         (twin_errors.InvalidInputError, errors.InvalidInputError),
                         (twin_errors.KernelCompileError, errors.KernelCompileError),
                         (twin_errors.TwinTimeoutError, errors.KernelTimeoutError),
                         (twin_errors.EnvironmentSetupError, errors.EnvironmentSetupError)):
        with pytest.raises(ours, match="the rule") as raised:
            with twin.translated():
                raise theirs("the rule")
        assert not isinstance(raised.value, twin_errors.TwinError)


def test_a_submodule_is_its_module_and_an_export_its_function():
    import types

    import rmsnorm_backward.golden as golden_module
    import rmsnorm_backward.simulate as simulate_module
    from rmsnorm_backward.precision import compare

    assert isinstance(golden_module, types.ModuleType) and callable(golden_module.golden)
    assert isinstance(simulate_module, types.ModuleType) and callable(simulate_module.simulate)
    assert rmsnorm_backward.golden is golden_module and rmsnorm_backward.simulate is simulate_module
    assert rmsnorm_backward.compare is compare
    assert not {name for name in rmsnorm_backward.__all__ if (PACKAGE / f"{name}.py").exists()
                or (PACKAGE / name).is_dir()}, "no export is named like a submodule"


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
        "from rmsnorm_backward import host_tiling\n"
        "try:\n"
        "    host_tiling.tiling({'dy': [2, 4], 'x': [2, 4], 'rstd': [2, 1], 'gamma': [4]}, dict.fromkeys(('dy', 'x', 'rstd', 'gamma'), 'float32'))\n"
        "except EnvironmentSetupError as e:\n"
        "    print(e)\n"
    )
    out = python_stdout(code)
    assert "rmsnorm_backward._tiling is not importable" in out and "./build.sh setup" in out
