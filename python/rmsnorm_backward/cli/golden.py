"""`rmsnorm-backward golden`: run the operator on the best backend and check it against the golden.

Inputs are random (seeded) or read from a directory in the msopgen sample layout:
    D/case.json                  shapes and dtypes of the tensors
    D/input/<dy|x|rstd|gamma>.bin
    D/output/golden_<dx|dgamma>.bin, D/output/output_<dx|dgamma>.bin
The defaults are the original operator text's example: x [32,64,128] fp32, rstd [32,64,1], gamma [128].
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .. import backends, op_def, preflight
from ..golden import golden
from ..precision import compare
from ._common import CliError, print_json, progress, write_atomic

HELP = "run the operator on the best backend here and compare it with the float64 golden"
EPS = 1e-6  # of the forward pass that produced rstd


def add_arguments(p) -> None:
    op = op_def.load()
    shorts = [d.short for d in op.type_values]
    p.add_argument("--shape", default="32,64,128", help="shape of dy and x, comma-separated (default %(default)s)")
    p.add_argument("--gamma-dims", type=int, default=1, help="k: gamma is the last k dims of x (default %(default)s)")
    p.add_argument("--rstd-flat", action="store_true",
                   help="shape rstd x.shape[:-k] instead of x.shape[:-k] + (1,)*k (the operator text's form)")
    p.add_argument("--dtype", default="fp32", choices=shorts, help="dtype of dy, x, gamma and dx (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default %(default)s)")
    p.add_argument("--soc", default="Ascend910B2", help="SoC the twin simulates (default %(default)s)")
    p.add_argument("--backend", default="auto", choices=["auto", "twin", "npu"],
                   help="where to run (default: the NPU when usable, else the twin)")
    p.add_argument("--from-dir", type=Path, metavar="D", help="read inputs (and golden, if present) from D")
    p.add_argument("--save-dir", type=Path, metavar="D", help="write inputs, golden and outputs to D")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        dims = ()
    if not dims or any(d < 0 for d in dims):
        raise CliError(f"--shape must be non-negative integers separated by commas, like 32,64,128 (got {text!r})")
    return dims


def case_from_options(args) -> dict:
    shape = parse_shape(args.shape)
    if len(shape) < 2:
        raise CliError(f"--shape needs at least 2 dims: the rows and the dims of gamma (got {args.shape!r})")
    if not 1 <= args.gamma_dims < len(shape):
        raise CliError(f"--gamma-dims must be from 1 to {len(shape) - 1} for a {len(shape)}-D --shape (got {args.gamma_dims})")
    k = args.gamma_dims
    dtype = op_def.dtype_of(args.dtype).name
    rstd = shape[:-k] if args.rstd_flat else shape[:-k] + (1,) * k
    return {"shapes": {"dy": shape, "x": shape, "rstd": rstd, "gamma": shape[-k:],
                       "dx": shape, "dgamma": shape[-k:]},
            "dtypes": _dtypes_for(dtype)}


def _dtypes_for(t: str) -> dict:
    """Each tensor's dtype name when the type variable T is `t` (from op_def)."""
    op = op_def.load()
    index = [d.name for d in op.type_values].index(t)
    return {tensor.name: tensor.dtypes[index].name for tensor in op.tensors}


def random_inputs(case: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    shapes, dtypes = case["shapes"], case["dtypes"]
    np_dtype = {n: op_def.DTYPES[d].numpy() for n, d in dtypes.items()}
    x = rng.standard_normal(shapes["x"], dtype=np.float32).astype(np_dtype["x"])
    k = len(shapes["gamma"])
    axes = tuple(range(x.ndim - k, x.ndim))
    mean_sq = np.mean(np.square(x.astype(np.float64)), axis=axes, keepdims=True) if x.size else np.zeros(shapes["rstd"])
    return {
        "dy": rng.standard_normal(shapes["dy"], dtype=np.float32).astype(np_dtype["dy"]),
        "x": x,
        "rstd": (1.0 / np.sqrt(mean_sq + EPS)).reshape(shapes["rstd"]).astype(np_dtype["rstd"]),
        "gamma": rng.uniform(0.5, 1.5, shapes["gamma"]).astype(np_dtype["gamma"]),
    }


def _read_bin(path: Path, shape, dtype: np.dtype) -> np.ndarray:
    if not path.is_file():
        raise CliError(f"{path} is missing")
    want = math.prod(shape) * dtype.itemsize
    got = path.stat().st_size
    if got != want:
        raise CliError(f"{path} has {got} bytes; shape {list(shape)} of {dtype.name} needs {want}")
    return np.fromfile(path, dtype=dtype).reshape(shape)


def load_dir(d: Path, args) -> tuple[dict, dict, dict | None]:
    """(case, inputs, golden or None) from a sample directory."""
    if not d.is_dir():
        raise CliError(f"--from-dir {d} is not a directory")
    meta = d / "case.json"
    if meta.is_file():
        try:
            raw = json.loads(meta.read_text())
            case = {"shapes": {n: tuple(int(v) for v in s) for n, s in raw["shapes"].items()}, "dtypes": raw["dtypes"]}
            missing = [t.name for t in op_def.load().tensors if t.name not in case["shapes"] or t.name not in case["dtypes"]]
            if missing:
                raise ValueError(f"no shape or dtype for {', '.join(missing)}")
            if any(name not in op_def.DTYPES for name in case["dtypes"].values()):
                raise ValueError(f"dtypes must be among {', '.join(op_def.DTYPES)}")
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CliError(f"{meta} is not a valid case description ({e})") from None
    else:
        case = case_from_options(args)
    preflight.golden_run(case["shapes"], case["dtypes"], soc=args.soc)
    op = op_def.load()
    inputs = {t.name: _read_bin(d / "input" / f"{t.name}.bin", case["shapes"][t.name],
                                op_def.DTYPES[case["dtypes"][t.name]].numpy()) for t in op.inputs}
    paths = {t.name: d / "output" / f"golden_{t.name}.bin" for t in op.outputs}
    if not all(p.is_file() for p in paths.values()):
        return case, inputs, None
    return case, inputs, {n: _read_bin(p, case["shapes"][n], np.dtype(np.float64)) for n, p in paths.items()}


def save_dir(d: Path, case: dict, inputs: dict, gold: dict, outputs: dict) -> None:
    meta = {"shapes": {n: list(s) for n, s in case["shapes"].items()}, "dtypes": case["dtypes"]}
    write_atomic(d / "case.json", (json.dumps(meta, indent=2) + "\n").encode())
    for name, a in inputs.items():
        write_atomic(d / "input" / f"{name}.bin", np.ascontiguousarray(a).tobytes())
    for name in gold:
        write_atomic(d / "output" / f"golden_{name}.bin", np.ascontiguousarray(gold[name], np.float64).tobytes())
        write_atomic(d / "output" / f"output_{name}.bin", np.ascontiguousarray(outputs[name]).tobytes())


def run(args) -> int:
    if args.seed < 0:
        raise CliError(f"--seed must be a non-negative integer (got {args.seed})")
    bar = progress(5, "golden", enabled=not args.json)
    with bar:
        if args.from_dir:
            case, inputs, gold = load_dir(args.from_dir, args)
        else:
            case = case_from_options(args)
            preflight.golden_run(case["shapes"], case["dtypes"], soc=args.soc)  # before any array is made
            inputs, gold = random_inputs(case, args.seed), None
        bar.update()
        dy, x, rstd, gamma = (inputs[n] for n in ("dy", "x", "rstd", "gamma"))
        if gold is None:
            gold = dict(zip(("dx", "dgamma"), golden(dy, x, rstd, gamma)))
        bar.update()
        backend = backends.best() if args.backend == "auto" else _chosen(args.backend)
        dx, dgamma, details = backends.run(backend.name, dy, x, rstd, gamma, soc=args.soc)
        outputs = {"dx": dx, "dgamma": dgamma}
        bar.update()
        reports = {"dx": compare(dx, gold["dx"], case["dtypes"]["dx"]),
                   "dgamma": compare(dgamma, gold["dgamma"], case["dtypes"]["dgamma"], round_golden=False)}
        bar.update()
        if args.save_dir:
            try:
                save_dir(args.save_dir, case, inputs, gold, outputs)
            except OSError as e:
                raise CliError(f"--save-dir {args.save_dir} cannot be written ({e.strerror}: {e.filename})") from None
        bar.update()
    passed = all(r.passed for r in reports.values())
    if args.json:
        print_json({"op": op_def.load().type, "backend": backend.name, "soc": args.soc,
                    "shapes": {n: list(s) for n, s in case["shapes"].items()}, "dtypes": case["dtypes"],
                    "seed": None if args.from_dir else args.seed, "details": details,
                    "reports": {n: r.to_dict() for n, r in reports.items()}, "passed": passed})
    else:
        shapes = ", ".join(f"{n} {list(s)}" for n, s in case["shapes"].items() if n in inputs)
        print(f"{op_def.load().type} on {backend.name} ({args.soc}): {shapes}; {case['dtypes']['x']}"
              + ("" if args.from_dir else f"; seed {args.seed}"))
        for name, report in reports.items():
            print(f"  {name:7s} {report}")
        if details:
            print("  " + ", ".join(f"{k} {v}" for k, v in details.items()))
        print("PASS" if passed else "FAIL")
    return 0 if passed else 1


def _chosen(name: str) -> backends.Backend:
    backend = backends.twin_backend() if name == "twin" else backends.npu_backend()
    if not backend.usable:
        raise CliError(f"--backend {name} is not usable here: {backend.detail}; {backend.next_step}")
    return backend
