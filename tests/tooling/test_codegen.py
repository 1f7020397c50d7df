# SPDX-License-Identifier: BSD-3-Clause
"""Code generation from op_def: gen --check on the repository, snapshots of every template, a
changed op_def reaching every consumer, and the generated registration compiled and read back."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rmsnorm_backward import op_def, resources
from rmsnorm_backward.cli import main
from rmsnorm_backward.codegen import generate

ROOT = resources.checkout()
HERE = Path(__file__).resolve().parent
TOY = HERE / "fixtures" / "toy_op.toml"
TOY_SNAPSHOTS = HERE / "snapshots" / "toy"
BF16_SPELLINGS = ("DT_BF16", "ACL_BF16", "bfloat16", "bf16")


def rendered_tree(tmp_path: Path, toml: Path) -> Path:
    out = tmp_path / "tree"
    out.mkdir()
    assert main(["gen", "--op-def", str(toml), "--root", str(out)]) == 0
    return out


def test_gen_check_passes_on_the_repository(capsys):
    assert main(["gen", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_gen_check_names_every_stale_file_after_hand_edits(tmp_path, capsys):
    tree = rendered_tree(tmp_path, op_def.DEFAULT_PATH)
    capsys.readouterr()
    (tree / "op_host/rms_norm_backward_def.cpp").write_text("// hand edit\n")
    proto = tree / "op_host/op_proto/rms_norm_backward_proto.h"
    proto.write_text(proto.read_text().replace("DT_BF16", "DT_INT8", 1))
    (tree / "op_host/op_info/aic-ascend910_93-ops-info.json").unlink()
    (tree / "op_host/op_info/aic-ascend310p-ops-info.json").write_text("{}\n")  # not produced by op_def

    assert main(["gen", "--check", "--root", str(tree)]) == 1
    out = capsys.readouterr().out
    for stale in ("op_host/rms_norm_backward_def.cpp", "op_host/op_proto/rms_norm_backward_proto.h",
                  "op_host/op_info/aic-ascend910_93-ops-info.json", "op_host/op_info/aic-ascend310p-ops-info.json"):
        assert stale in out
    assert "aclnn_rms_norm_backward.h" not in out

    assert main(["gen", "--root", str(tree)]) == 0
    assert not (tree / "op_host/op_info/aic-ascend310p-ops-info.json").exists()
    assert main(["gen", "--check", "--root", str(tree)]) == 0


def test_gen_into_a_read_only_root_is_one_sentence(read_only_dir, capsys):
    assert main(["gen", "--root", str(read_only_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"Error: --root {read_only_dir} cannot be written (")
    assert not (read_only_dir / "op_host").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--root", "{tmp}/missing"], "Invalid value for '--root': Directory '{tmp}/missing' does not exist."),
    (["--op-def", "{tmp}"], "Invalid value for '--op-def': File '{tmp}' is a directory."),
    (["--op-def", "{tmp}/bad.toml"], "Invalid value for '--op-def': {tmp}/bad.toml is not a valid operator definition"),
])
def test_bad_gen_options_are_one_sentence(tmp_path, capsys, argv, message):
    (tmp_path / "bad.toml").write_text("[op]\ntype = 'X'\n")
    assert main(["gen", *(a.replace("{tmp}", str(tmp_path)) for a in argv)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("Error: " + message.replace("{tmp}", str(tmp_path)))


def test_gen_outside_a_checkout_needs_root(monkeypatch, capsys):
    monkeypatch.setattr(resources, "checkout", lambda: None)  # as from an installed wheel (tests/tooling/test_wheel.py)
    assert main(["gen", "--check"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "Error: Invalid value for '--root': is needed outside a source checkout: name the tree to generate into")


def test_gen_check_json_lists_stale_files(tmp_path, capsys):
    tree = rendered_tree(tmp_path, op_def.DEFAULT_PATH)
    capsys.readouterr()
    (tree / "CMakePresets.json").write_text("{}\n")
    assert main(["gen", "--check", "--root", str(tree), "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"check": True, "stale": ["CMakePresets.json"], "ok": False}


@pytest.mark.parametrize("target", generate.TARGETS, ids=lambda t: t.template)
def test_template_snapshot(target):
    # Snapshots were made with: rmsnorm-backward gen --op-def tests/tooling/fixtures/toy_op.toml
    #                                                 --root tests/tooling/snapshots/toy
    toy = op_def.load(TOY)
    rendered = generate.render_all(toy)
    paths = [target.path.format(file=toy.file, soc=soc) for soc in (toy.socs if target.per_soc else (None,))]
    for path in paths:
        assert rendered[path] == (TOY_SNAPSHOTS / path).read_text(), f"{path} differs from its snapshot"


def test_every_template_is_rendered_and_snapshotted():
    templates = {p.name for p in Path(generate.__file__).parent.glob("*.j2")}
    assert templates == {t.template for t in (*generate.TARGETS, *generate.REGIONS)}
    assert generate.stale(TOY_SNAPSHOTS, op_def.load(TOY)) == []


@pytest.mark.parametrize("path", [p for p in generate.render_all(op_def.load()) if p.endswith(".json")])
def test_generated_json_parses_and_matches_op_def(path):
    data = json.loads((ROOT / path).read_text())
    op = op_def.load()
    if "op_info" in path:
        info = data[op.type]
        for kind, tensors in (("input", op.inputs), ("output", op.outputs)):
            for i, t in enumerate(tensors):
                assert info[f"{kind}{i}"]["name"] == t.name
                assert info[f"{kind}{i}"]["dtype"].split(",") == [d.op_info for d in t.dtypes]
    else:
        assert [p["name"] for p in data["configurePresets"]] == ["cpu", *op.socs]


def _without(text: str, drop: str) -> str:
    return text.replace(f'"{drop}", ', "").replace(f', "{drop}"', "")


def test_dropping_bf16_from_op_def_changes_every_dtype_consumer(tmp_path):
    toml = tmp_path / "rms_norm_backward.toml"
    # bf16 out of T, and the mixed combination built on it
    toml.write_text(re.sub(r'\[\[dtypes\.mixed\]\]\nT = "bfloat16"\n[^\n]*\n', "",
                           _without(op_def.DEFAULT_PATH.read_text(), "bfloat16")))
    narrowed = op_def.load(toml)
    assert [d.name for d in narrowed.type_values] == ["float16", "float32"]
    tree = rendered_tree(tmp_path, toml)

    changed = set(generate.stale(ROOT, narrowed))
    # Everything but the presets and the NPU SoC table (SoCs only), the CANN tiling form and the
    # binding's field dict (fields only) and the ATB interface (tensor roles only: its dtype checks
    # are the tiling's) lists dtypes.
    dtype_consumers = {p for p in generate.render_all(op_def.load())
                       if not p.endswith(("CMakePresets.json", "npu_socs.cmake", "_tiling_data_def.h",
                                          "_tiling_fields.h", "_atb_interface.h"))}
    assert changed == dtype_consumers | {r.path for r in generate.REGIONS}  # the README's parameter table too
    regions = generate.render_all(narrowed, ROOT)
    for path in changed:
        text = regions[path] if path in regions and not (tree / path).exists() else (tree / path).read_text()
        if path == "README.md":
            text = text.split(generate.REGIONS[0].markers[0])[1].split(generate.REGIONS[0].markers[1])[0]
        assert not any(s in text for s in BF16_SPELLINGS), f"{path} still mentions bf16"


def test_dropping_a_soc_removes_its_op_info_config_and_preset(tmp_path):
    toml = tmp_path / "rms_norm_backward.toml"
    dropped = _without(op_def.DEFAULT_PATH.read_text(), "ascend910_93")
    toml.write_text(re.sub(r"(?m)^ascend910_93 = .*\n", "", dropped))  # and its [soc_chips] entry
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "op_host" / "op_info", tree / "op_host" / "op_info")
    assert main(["gen", "--op-def", str(toml), "--root", str(tree)]) == 0
    assert not (tree / "op_host/op_info/aic-ascend910_93-ops-info.json").exists()
    assert 'AddConfig("ascend910_93")' not in (tree / "op_host/rms_norm_backward_def.cpp").read_text()
    presets = json.loads((tree / "CMakePresets.json").read_text())
    assert [p["name"] for p in presets["configurePresets"]] == ["cpu", "ascend910b"]


def _registration(tmp_path: Path, root: Path, op) -> dict:
    """Compile the generated registration + proto against the test doubles and read back what it registers."""
    glue = tmp_path / "glue.cpp"
    lines = ['#include "register/op_def_registry.h"']
    for fn, ctx in ((op.host["tiling_func"], "TilingContext"), (op.host["infer_shape"], "InferShapeContext"),
                    (op.host["infer_dtype"], "InferDataTypeContext")):
        ns, name = fn.split("::")
        lines.append(f"namespace {ns} {{ ge::graphStatus {name}(gert::{ctx} *) {{ return 0; }} }}")
    glue.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "dump"
    stub = HERE / "stub_cann"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(stub), "-I", str(root / "op_host"),
                    str(root / "op_host" / f"{op.file}_def.cpp"), str(glue), str(stub / "dump_registration.cpp"),
                    "-o", str(exe)], check=True, capture_output=True, text=True)
    return json.loads(subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout)


@pytest.mark.parametrize("which", ["repository", "toy"])
def test_generated_registration_compiles_and_declares_op_def(tmp_path, which):
    op, root = (op_def.load(), ROOT) if which == "repository" else (op_def.load(TOY), TOY_SNAPSHOTS)
    got = _registration(tmp_path, root, op)
    (reg,) = got["ops"]
    assert reg["type"] == op.type and reg["socs"] == list(op.socs)
    assert reg["tiling"] and reg["infer_shape"] and reg["infer_dtype"]
    columns = generate.columns(op)
    for kind, tensors in (("inputs", op.inputs), ("outputs", op.outputs)):
        assert [p["name"] for p in reg[kind]] == [t.name for t in tensors]
        for p, t in zip(reg[kind], tensors):
            assert p["required"] == (not t.optional) and p["auto_contiguous"]
            assert p["dtypes"] == [t.dtypes[i].ge for i, _ in columns]
            assert p["formats"] == p["unknown_shape_formats"] == [f"FORMAT_{fmt}" for _, fmt in columns]
    (proto,) = got["protos"]
    assert proto["type"] == op.type
    assert [(p["name"], p["types"]) for p in proto["inputs"]] == [
        (t.name, list(dict.fromkeys(d.ge for d in t.dtypes))) for t in op.inputs]
    assert [p["name"] for p in proto["outputs"]] == [t.name for t in op.outputs]
    assert proto["optional"] == [t.name for t in op.inputs if t.optional]
    kinds = {"float": float, "int": int, "bool": lambda v: v == "true"}
    for declared in (reg["attrs"], proto["attrs"]):
        assert [a["name"] for a in declared] == [a.name for a in op.attrs]
        for got, a in zip(declared, op.attrs):
            assert got["type"] == a.spelling("ge") and kinds[a.type](got["default"]) == a.default
            assert got.get("optional", True)


TILING_OPS = [("toy", TOY, TOY_SNAPSHOTS)] + ([("repository", op_def.DEFAULT_PATH, ROOT)] if op_def.load().tiling else [])


@pytest.mark.parametrize(("which", "toml", "root"), TILING_OPS, ids=[t[0] for t in TILING_OPS])
def test_plain_tiling_struct_has_op_defs_layout(tmp_path, which, toml, root):
    op = op_def.load(toml)
    t = op.tiling
    src = tmp_path / "layout.cpp"
    src.write_text(
        f'#include <cstddef>\n#include <cstdio>\n#include "{op.file}_tiling_data.h"\nint main() {{\n'
        + "".join(f'    std::printf("{f.name} %zu\\n", offsetof({t.struct}, {f.name}));\n' for f in t.fields)
        + f'    std::printf("sizeof %zu\\n", sizeof({t.struct}));\n'
        + "".join(f'    std::printf("key {p.name}{d.short} %u\\n", unsigned({t.key_enum}::k{p.name}{d.short.capitalize()}));\n'
                  for p in t.paths for d, _ in t.dtype_codes)
        + "}\n")
    exe = tmp_path / "layout"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(root / "op_kernel"), str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    got = dict(line.rsplit(" ", 1) for line in subprocess.run([str(exe)], check=True, capture_output=True,
                                                               text=True).stdout.splitlines())
    assert {f.name: int(got[f.name]) for f in t.fields} == {f.name: f.offset for f in t.fields}
    assert int(got["sizeof"]) == t.size
    for p in t.paths:
        for d, code in t.dtype_codes:
            assert int(got[f"key {p.name}{d.short}"]) == p.value * t.path_step + code


@pytest.mark.parametrize(("fields", "message"), [
    ('{name="a", type="uint32_t", doc="x"}, {name="b", type="uint64_t", doc="y"}',
     "tiling field 'b' (uint64_t) would start at byte 4, not a multiple of its size"),
    ('{name="a", type="size_t", doc="x"}', "tiling field 'a' has type 'size_t'; it must be one of"),
])
def test_op_def_rejects_tiling_fields_that_would_differ_across_compilers(tmp_path, fields, message):
    text = TOY.read_text()
    head, _, _ = text.partition("[[tiling_data.fields]]")
    toml = tmp_path / "bad.toml"
    toml.write_text(head.replace("[tiling_data]", "[tiling_data]\nfields = [" + fields + "]", 1))
    with pytest.raises(ValueError, match=re.escape(message)):
        op_def.load(toml)


@pytest.mark.parametrize(("which", "toml", "root"), TILING_OPS, ids=[t[0] for t in TILING_OPS])
def test_generated_dtype_table_is_op_defs(tmp_path, which, toml, root):
    op = op_def.load(toml)
    t, macro = op.tiling, op.macro_prefix
    src = tmp_path / "dtypes.cpp"
    src.write_text(
        f'#include <cstdio>\n#include "{op.file}_dtypes.h"\n'
        '#define ROW(name, ge, acl, at) std::printf("row %s %s %s %s\\n", name, #ge, #acl, #at);\n'
        '#define REJECTED(name, ge) std::printf("rejected %s %s\\n", name, #ge);\n'
        "int main() {\n"
        f"    for (const auto &d : k{t.dtype_enum}s) {{\n"
        f'        std::printf("code %.*s %u %u %d\\n", int(d.name.size()), d.name.data(), unsigned(d.code), d.size,\n'
        f"                    int(Find{t.dtype_enum}(d.name) == &d));\n"
        "    }\n"
        f'    std::printf("unknown %d\\n", int(Find{t.dtype_enum}("float64") == nullptr));\n'
        f"    {macro}_DTYPES(ROW)\n    {macro}_REJECTED_DTYPES(REJECTED)\n"
        "}\n")
    exe = tmp_path / "dtypes"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(root / "op_host"), str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    assert lines == ([f"code {d.name} {code} {d.itemsize} 1" for d, code in t.dtype_codes] + ["unknown 1"]
                     + [f"row {d.name} {d.ge} {d.acl} {d.torch}" for d in op.tensor_dtypes]
                     + [f"rejected {name} {ge}" for name, ge in op.rejected_dtypes.items()])
