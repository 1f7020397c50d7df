# SPDX-License-Identifier: BSD-3-Clause
"""The operator's interface, loaded from op_def/rms_norm_backward.toml (the one source of it).

`load()` returns an `OpDef`; its dtype table (DTYPES for the package's op_def) maps op_def's dtype
names to the spellings each consumer needs (NumPy, CANN's ge and acl enums, op info JSON, CLI short
names, torch's ScalarType).
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import resources

DEFAULT_PATH = resources.path("op_def/rms_norm_backward.toml")


@dataclass(frozen=True)
class DType:
    """One row of op_def's dtype table ([[dtypes.table]]): a dtype as each layer spells it."""
    name: str      # op_def and NumPy spelling
    short: str     # CLI spelling
    ge: str        # ge::DataType enumerator (OpDef, op proto)
    acl: str       # aclDataType enumerator (aclnn)
    op_info: str   # op info JSON spelling
    torch: str     # at::ScalarType enumerator (the torch_npu adapter)
    itemsize: int

    def numpy(self):
        """The NumPy dtype (bfloat16 comes from ml_dtypes, imported only when asked for)."""
        import numpy as np

        if self.name == "bfloat16":
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(self.name)


def _dtype_table(raw: dict, path: Path) -> dict[str, DType]:
    try:
        return {row["name"]: DType(**row) for row in raw["dtypes"]["table"]}
    except (KeyError, TypeError) as e:
        raise ValueError(f"{path}: [[dtypes.table]] must give each dtype exactly the fields "
                         f"name, short, ge, acl, op_info, torch, itemsize ({e})") from None


def dtype_of(spec) -> DType:
    """The DType (of the package's op_def) for an op_def name, a CLI short name or a NumPy dtype."""
    for d in DTYPES.values():
        if spec in (d.name, d.short):
            return d
    name = getattr(spec, "name", None) or getattr(getattr(spec, "dtype", None), "name", None)
    if name in DTYPES:
        return DTYPES[name]
    from .errors import InvalidInputError

    raise InvalidInputError(f"dtype {spec!r} is not one of {', '.join(DTYPES)} (or {', '.join(d.short for d in DTYPES.values())})")


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str                    # a dtype name or the type variable "T"
    doc: str
    dtypes: tuple[DType, ...]     # one per dtype combination, in op_def order
    shape_like: str | None = None
    optional: bool = False        # an input that may be absent (CANN's OPTIONAL param type)
    atb: bool = True              # part of the ATB operation's VariantPack

    @property
    def aclnn_name(self) -> str:
        """The aclnn parameter name opbuild gives it: an optional input's name ends in Optional."""
        return self.name + ("Optional" if self.optional else "")


# How each layer spells an attribute's type: CANN's op proto (.ATTR) and OpDef (.Attr().<Type>()), the
# aclnn signature opbuild generates (a float attribute is a double there), the op info JSON, the torch
# schema, and the plain C++ the host tiling takes it as.
ATTR_TYPES = {
    "float": {"ge": "Float", "aclnn": "double", "op_info": "float", "torch": "float", "cpp": "float"},
    "int": {"ge": "Int", "aclnn": "int64_t", "op_info": "int", "torch": "int", "cpp": "int64_t"},
    "bool": {"ge": "Bool", "aclnn": "bool", "op_info": "bool", "torch": "bool", "cpp": "bool"},
}


@dataclass(frozen=True)
class Attr:
    """One attribute of the operator ([[attrs]]): optional, with a default and its rules."""
    name: str
    type: str        # a key of ATTR_TYPES
    default: object
    doc: str
    finite: bool = False          # rule: a finite float32
    needs: str | None = None      # rule: keeps its default when this optional input is absent

    def spelling(self, layer: str) -> str:
        """The attribute's type as `layer` (a key of ATTR_TYPES' rows) spells it."""
        return ATTR_TYPES[self.type][layer]

    @property
    def literal(self) -> str:
        """The default as a C++ (and op info) literal: 0.0, 3, true."""
        if self.type == "bool":
            return "true" if self.default else "false"
        return repr(float(self.default)) if self.type == "float" else str(int(self.default))

    @property
    def camel(self) -> str:
        """The aclnn parameter name opbuild gives the attribute: lower camel case, gamma_offset ->
        gammaOffset (its "Optional" suffix is for string and list attributes only, none of ATTR_TYPES)."""
        head, *rest = self.name.split("_")
        return head + "".join(w.capitalize() for w in rest)


def _attr(raw: dict, raw_inputs: list, where: str) -> Attr:
    if raw.get("type") not in ATTR_TYPES:
        raise ValueError(f"{where}: attribute {raw.get('name')!r} has type {raw.get('type')!r}; it must be one of "
                         f"{', '.join(ATTR_TYPES)}")
    kinds = {"float": (int, float), "int": (int,), "bool": (bool,)}[raw["type"]]
    default = raw.get("default")
    if isinstance(default, bool) != (raw["type"] == "bool") or not isinstance(default, kinds):
        raise ValueError(f"{where}: attribute {raw['name']!r} needs a {raw['type']} default (got {default!r})")
    needs = raw.get("needs")
    optional = {t["name"] for t in raw_inputs if t.get("optional")}
    if needs is not None and needs not in optional:
        raise ValueError(f"{where}: attribute {raw['name']!r} needs {needs!r}, which is not an optional input "
                         f"({', '.join(sorted(optional)) or 'none'})")
    if raw.get("finite") and raw["type"] != "float":
        raise ValueError(f"{where}: attribute {raw['name']!r} is {raw['type']}; only a float can be 'finite'")
    return Attr(raw["name"], raw["type"], default, raw["doc"], bool(raw.get("finite", False)), needs)


# Fixed-width C++ types a tiling field may have, with their sizes (the host and the kernel must agree
# on every byte, so nothing platform-dependent).
TILING_FIELD_TYPES = {"uint8_t": 1, "int8_t": 1, "uint16_t": 2, "int16_t": 2, "uint32_t": 4, "int32_t": 4,
                      "float": 4, "uint64_t": 8, "int64_t": 8}


@dataclass(frozen=True)
class TilingField:
    name: str
    type: str
    doc: str
    offset: int      # byte offset in the struct: laid out without padding (checked on load)

    @property
    def size(self) -> int:
        return TILING_FIELD_TYPES[self.type]

    @property
    def decl(self) -> str:
        return f"{self.type} {self.name};"


@dataclass(frozen=True)
class TilingConstant:
    name: str
    type: str
    value: int
    doc: str


@dataclass(frozen=True)
class TilingPath:
    name: str        # key enumerator stem, e.g. RowsInUb -> kRowsInUbFp32
    value: int       # tiling key = value * path_step + dtype code
    doc: str

    @property
    def snake(self) -> str:
        """The path's name in messages and stats: RowsInUb -> rows_in_ub."""
        return "".join("_" + c.lower() if c.isupper() else c for c in self.name).lstrip("_")


@dataclass(frozen=True)
class TilingData:
    """The tiling data struct and the enums of its tiling key, rendered in CANN's TilingData form and
    as the plain struct the kernel, the host tiling and the twin share."""
    struct: str
    doc: str
    fields: tuple[TilingField, ...]
    dtype_enum: str
    dtype_codes: tuple[tuple[DType, int], ...]   # the values of T with their codes, by code
    path_enum: str
    key_enum: str
    key_doc: str
    path_step: int
    paths: tuple[TilingPath, ...]
    constants: tuple[TilingConstant, ...] = ()   # compile-time limits host and kernel share

    @property
    def size(self) -> int:
        """sizeof the struct: the fields, then tail padding up to the largest field's alignment."""
        if not self.fields:
            return 0
        end = self.fields[-1].offset + self.fields[-1].size
        align = max(f.size for f in self.fields)
        return -(-end // align) * align


def _tiling(raw: dict, type_values: tuple[DType, ...], where: str) -> TilingData:
    fields, offset = [], 0
    for f in raw["fields"]:
        size = TILING_FIELD_TYPES.get(f["type"])
        if size is None:
            raise ValueError(f"{where}: tiling field {f['name']!r} has type {f['type']!r}; it must be one of "
                             f"{', '.join(TILING_FIELD_TYPES)}")
        if offset % size:
            raise ValueError(f"{where}: tiling field {f['name']!r} ({f['type']}) would start at byte {offset}, "
                             f"not a multiple of its size: reorder the fields so the struct has no padding")
        fields.append(TilingField(f["name"], f["type"], f["doc"], offset))
        offset += size
    codes = raw["dtype_codes"]
    missing = [d.name for d in type_values if d.name not in codes]
    if missing:
        raise ValueError(f"{where}: [tiling_data.dtype_codes] has no code for {', '.join(missing)}")
    return TilingData(
        struct=raw["struct"], doc=raw["doc"], fields=tuple(fields), dtype_enum=raw["dtype_enum"],
        dtype_codes=tuple(sorted(((d, codes[d.name]) for d in type_values), key=lambda dc: dc[1])),
        path_enum=raw["path_enum"], key_enum=raw["key_enum"], key_doc=raw["key_doc"], path_step=raw["path_step"],
        paths=tuple(TilingPath(p["name"], p["value"], p["doc"]) for p in raw["paths"]),
        constants=tuple(TilingConstant(c["name"], c["type"], c["value"], c["doc"]) for c in raw.get("constants", ())))


@dataclass(frozen=True)
class OpDef:
    type: str
    file: str
    namespace: str           # root C++ namespace of the operator's own code (kernel, layout, tiling, atb, ...)
    macro_prefix: str        # prefix of the operator's own C++ macros and include guards
    doc: str
    socs: tuple[str, ...]
    formats: tuple[str, ...]
    vendor: str
    reference_soc: str       # the SoC the twin runs by default (op_host/tiling/reference_platform.h's kSocName)
    soc_chips: dict          # SoC family -> the chip name CANN's ascendc.cmake accepts (SOC_VERSION)
    type_values: tuple[DType, ...]   # the values of T: one dtype combination each, then the mixed ones
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    host: dict
    attrs: tuple[Attr, ...] = ()
    dtypes: dict = field(default_factory=dict)   # name -> DType: the dtype table
    rejected_dtypes: dict = field(default_factory=dict)   # name -> ge::DataType of dtypes no tensor may have
    tiling: TilingData | None = None
    path: Path = field(default=DEFAULT_PATH, compare=False)

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        return self.inputs + self.outputs

    def tensor(self, name: str) -> Tensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def tensor_dtypes(self) -> tuple[DType, ...]:
        """The rows of the dtype table some tensor may have, in table order."""
        used = {d.name for t in self.tensors for d in t.dtypes}
        return tuple(d for d in self.dtypes.values() if d.name in used)

    mixed: tuple[dict, ...] = ()     # [[dtypes.mixed]]: T's value and the tensors that differ from it

    @property
    def combinations(self) -> int:
        """Columns of the OpDef DataType lists: one per value of T, then one per mixed combination."""
        return len(self.type_values) + len(self.mixed)


def _tensor(raw: dict, table: dict[str, DType], type_values: tuple[DType, ...], where: str,
            mixed: tuple[dict, ...] = ()) -> Tensor:
    spec = raw["dtype"]
    if spec == "T":
        dtypes = type_values
    elif spec in table:
        dtypes = (table[spec],) * len(type_values)
    else:
        raise ValueError(f"{where}: tensor {raw['name']!r} has dtype {spec!r}; it must be 'T' or one of {', '.join(table)}")
    dtypes += tuple(m.get(raw["name"], m["T"] if spec == "T" else table[spec]) for m in mixed)
    return Tensor(raw["name"], spec, raw["doc"], dtypes, raw.get("shape_like"), bool(raw.get("optional", False)),
                  bool(raw.get("atb", True)))


def _soc_chips(raw: dict, socs: list, path: Path) -> dict:
    chips = dict(raw.get("soc_chips", {}))
    if sorted(chips) != sorted(socs):
        raise ValueError(f"{path}: [soc_chips] must name one chip for each SoC of op.socs ({', '.join(socs)}), "
                         f"it names {', '.join(chips) or 'none'}")
    return chips


def _mixed(raw: dict, table: dict[str, DType], type_values: tuple[DType, ...], path: Path) -> tuple[dict, ...]:
    """[[dtypes.mixed]]: combinations beyond T's values, each T's value and the tensors that take
    another dtype (e.g. a 16-bit x with a float32 gamma), as DTypes."""
    out = []
    names = {t["name"] for t in raw.get("inputs", []) + raw.get("outputs", [])}
    for row in raw["dtypes"].get("mixed", ()):
        bad = [k for k, v in row.items() if (k != "T" and k not in names) or v not in table]
        if bad or row.get("T") not in {d.name for d in type_values}:
            raise ValueError(f"{path}: [[dtypes.mixed]] {row} must give T one of [dtypes].T and tensors of op_def "
                             f"dtypes of [[dtypes.table]]")
        out.append({k: table[v] for k, v in row.items()})
    return tuple(out)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _check_names(raw: dict, path: Path) -> None:
    """Tensor and attribute names become C++, Python and JSON names in every generated file: each a C
    identifier, no two alike."""
    names = [t.get("name") for t in raw.get("inputs", []) + raw.get("outputs", []) + raw.get("attrs", [])]
    bad = [n for n in names if not isinstance(n, str) or not _IDENTIFIER.match(n)]
    if bad:
        raise ValueError(f"{path}: tensor and attribute names must be C identifiers (got {', '.join(map(repr, bad))})")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{path}: tensor and attribute names must be unique ({', '.join(map(repr, twice))} "
                         "named more than once)")


def parse(text: str, path: Path = DEFAULT_PATH) -> OpDef:
    raw = tomllib.loads(text)
    _check_names(raw, path)
    table = _dtype_table(raw, path)
    try:
        type_values = tuple(table[n] for n in raw["dtypes"]["T"])
    except KeyError as e:
        raise ValueError(f"{path}: [dtypes].T lists {e}, which is not in [[dtypes.table]] ({', '.join(table)})") from None
    op = raw["op"]
    mixed = _mixed(raw, table, type_values, path)
    return OpDef(
        type=op["type"],
        file=op["file"],
        namespace=op["namespace"],
        macro_prefix=op["macro_prefix"],
        doc=op["doc"],
        socs=tuple(op["socs"]),
        formats=tuple(op["formats"]),
        vendor=op["vendor"],
        reference_soc=op.get("reference_soc", ""),
        soc_chips=_soc_chips(raw, op["socs"], path),
        type_values=type_values,
        inputs=tuple(_tensor(t, table, type_values, str(path), mixed) for t in raw["inputs"]),
        outputs=tuple(_tensor(t, table, type_values, str(path), mixed) for t in raw["outputs"]),
        mixed=mixed,
        host=dict(raw.get("host", {})),
        attrs=tuple(_attr(a, raw["inputs"], str(path)) for a in raw.get("attrs", ())),
        dtypes=table,
        rejected_dtypes=dict(raw["dtypes"].get("rejected", {})),
        tiling=_tiling(raw["tiling_data"], type_values, str(path)) if "tiling_data" in raw else None,
        path=path,
    )


@lru_cache(maxsize=None)
def _load_cached(path: Path) -> OpDef:
    return parse(path.read_text(encoding="utf-8"), path)


def load(path: str | Path | None = None) -> OpDef:
    """The operator's interface from `path` (default: the package's op_def, see resources)."""
    return _load_cached(Path(path or DEFAULT_PATH).resolve())


# The package's dtype table (its op_def's [[dtypes.table]]), by name.
DTYPES: dict[str, DType] = load().dtypes
