# SPDX-License-Identifier: BSD-3-Clause
"""Every code block of every Markdown file is checked by its language (markdown_files.py):

- python: run as written, outside the checkout, on the CPU twin (one interpreter per file, a fresh
  namespace per snippet); each shows a result and leaves nothing behind. The twin's own Markdown is run
  by its own distribution's tests (twin/tests/test_twin_readme.py).
- sh: `bash -n`; every `rmsnorm-backward` subcommand and option, `./build.sh` command, cmake preset and
  `.run` option it uses exists; every path into the checkout it names exists. A block of
  `rmsnorm-backward` calls that take seconds and no NPU (golden, gen, --help) is run in a scratch
  directory.
- cpp: compiled (syntax) against the repository's headers and its AscendCL test doubles; a block using
  ATB compiles against ATB's public headers (ATB_SRC) or is skipped saying so.
- json parses; text is prose.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from markdown_files import LANGUAGES, ROOT, Block, all_blocks, blocks, markdown_files, tracked

RUNNER = Path(__file__).resolve().parent / "run_snippets.py"
SEPARATORS = {"&&", "||", ";", "|"}


def where(block: Block) -> str:
    return block.where


def test_the_docs_are_found():
    if ROOT is None or not markdown_files():
        pytest.skip("the Markdown files are in a git checkout")
    assert {"README.md", "docs/design.md", "docs/torch.md", "twin/README.md"} <= set(markdown_files())


@pytest.mark.parametrize("block", all_blocks(), ids=where)
def test_every_block_names_a_checked_language(block):
    assert block.language in LANGUAGES, f"{block.where}: fence language {block.language!r}, not one of {LANGUAGES}"


# ---- python ---------------------------------------------------------------------------------------

PYTHON_FILES = sorted({b.path for b in all_blocks("python") if not b.path.startswith("twin/")})


@pytest.mark.parametrize("path", PYTHON_FILES)
def test_python_snippets_run_as_written(path, tmp_path):
    snippets = [b for b in blocks(path) if b.language == "python"]
    for module in ("torch", "transformers"):
        if any(re.search(rf"^(import|from) {module}\b", b.code, re.M) for b in snippets):
            pytest.importorskip(module, reason=f"{path}'s snippets need {module}")
    done = subprocess.run([sys.executable, str(RUNNER)], input=json.dumps([{"where": b.where, "code": b.code}
                                                                           for b in snippets]),
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert [r["where"] for r in results] == [b.where for b in snippets]
    failed = [f"{r['where']}:\n{r['error']}" for r in results if r["error"]]
    assert not failed, "\n".join(failed)
    silent = [r["where"] for r in results if not r["printed"].strip()]
    assert not silent, f"every snippet shows its result; these print nothing: {silent}"
    assert list(tmp_path.iterdir()) == []  # and leaves nothing behind


# ---- sh -------------------------------------------------------------------------------------------

def commands(code: str) -> list[list[str]]:
    """The simple commands of a shell block, as words (comments, continuations and separators gone)."""
    found = []
    for line in code.replace("\\\n", " ").splitlines():
        words, current = shlex.split(line, comments=True), []
        for word in words:
            if word in SEPARATORS:
                found.append(current)
                current = []
            else:
                current.append(word)
        found.append(current)
    return [c for c in found if c]


def program(command: list[str]) -> tuple[str, list[str]]:
    """The command's program and its arguments, leading VAR=value assignments skipped."""
    i = 0
    while i < len(command) and re.match(r"^[A-Za-z_]\w*=", command[i]):
        i += 1
    return (command[i], command[i + 1:]) if i < len(command) else ("", [])


def cli_commands() -> dict[str, set[str]]:
    """rmsnorm-backward's subcommands and the options each takes (the group's under "")."""
    from rmsnorm_backward.cli import cli

    def options(command) -> set[str]:
        return {o for p in command.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)} | {
            "--help", "-h"}

    return {"": options(cli), **{name: options(command) for name, command in cli.commands.items()}}


def build_sh_commands() -> set[str]:
    usage = subprocess.run([str(ROOT / "build.sh"), "--help"], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"^  (\w+)\b", usage, re.M))


def presets() -> set[str]:
    data = json.loads((ROOT / "CMakePresets.json").read_text())
    return {p["name"] for kind in ("configurePresets", "buildPresets") for p in data.get(kind, [])}


def top_level() -> set[str]:
    """The checkout's tracked top-level entries: a path under one of them is the checkout's to name
    (build outputs such as build_out/ are made by the commands themselves)."""
    return {p.split("/")[0] for p in tracked()}


def option_names(arguments: list[str]) -> list[str]:
    return [a.split("=", 1)[0] for a in arguments if a.startswith("-") and a not in ("-", "--")]


def check_command(command: list[str], known: dict) -> list[str]:
    """What in one command names something that does not exist, as sentences."""
    name, arguments = program(command)
    problems = []
    if name == "rmsnorm-backward":
        sub = next((a for a in arguments if not a.startswith("-")), "") if arguments[:1] != ["--version"] else ""
        if sub not in known["cli"]:
            return [f"rmsnorm-backward has no command {sub!r}"]
        problems += [f"rmsnorm-backward {sub} has no option {o}" for o in option_names(arguments)
                     if o not in known["cli"][sub] | known["cli"][""]]
    elif name == "./build.sh" and arguments:
        if arguments[0] not in known["build.sh"] | {"--help", "-h"}:
            problems.append(f"build.sh has no command {arguments[0]!r}")
    if name in ("cmake", "./build.sh") and "--preset" in arguments:
        preset = arguments[arguments.index("--preset") + 1]
        if preset not in known["presets"]:
            problems.append(f"no CMake preset {preset!r}")
    if name.endswith(".run"):
        usage = (ROOT / "scripts" / "install.sh").read_text()
        problems += [f"the .run has no option {o}" for o in option_names(arguments) if f"  {o} " not in usage]
    for word in (name, *arguments):
        path = word.split("=", 1)[-1] if word.startswith("-") else word
        path = path[2:] if path.startswith("./") else path
        if "/" not in path or re.search(r"[<>$*{}:~]", path) or path.startswith("/"):
            continue
        if path.split("/")[0] in known["top"] and not (ROOT / path).exists():
            problems.append(f"{word} does not exist in the checkout")
    return problems


CHEAP_SUBCOMMANDS = {"golden", "gen"}  # bench runs for minutes, doctor probes torch and CANN for seconds
FILE_TOOLS = {"rm", "ls", "cat", "mkdir"}


def runnable(block: Block) -> bool:
    """Blocks of rmsnorm-backward calls that need no NPU and take seconds (golden, gen, any --help), with
    file tools between them."""
    calls = [program(c) for c in commands(block.code)]
    cli_calls = [(n, a) for n, a in calls if n == "rmsnorm-backward"]
    if not cli_calls or any(n not in FILE_TOOLS | {"rmsnorm-backward"} for n, _ in calls):
        return False
    return all("npu" not in a and ({"--help", "-h", "--version"} & set(a) or set(a) & CHEAP_SUBCOMMANDS)
               for _, a in cli_calls)


SHELL = all_blocks("sh")


@pytest.mark.parametrize("block", SHELL, ids=where)
def test_shell_snippet_parses_and_names_what_exists(block):
    parsed = subprocess.run(["bash", "-n"], input=block.code, capture_output=True, text=True)
    assert parsed.returncode == 0, f"{block.where}: {parsed.stderr}"
    known = {"cli": cli_commands(), "build.sh": build_sh_commands(), "presets": presets(), "top": top_level()}
    problems = [p for c in commands(block.code) for p in check_command(c, known)]
    assert not problems, f"{block.where}: " + "; ".join(problems)


@pytest.mark.parametrize(("line", "problem"), [
    ("rmsnorm-backward golden --no-such-option 1", "rmsnorm-backward golden has no option --no-such-option"),
    ("rmsnorm-backward nope --json", "rmsnorm-backward has no command 'nope'"),
    ("./build.sh nope", "build.sh has no command 'nope'"),
    ("cmake --preset nope", "no CMake preset 'nope'"),
    ("./build_out/custom_opp_x.run --nope", "the .run has no option --nope"),
    ("cat docs/no_such_page.md  # a comment", "docs/no_such_page.md does not exist in the checkout"),
])
def test_the_shell_check_catches(line, problem):
    known = {"cli": cli_commands(), "build.sh": build_sh_commands(), "presets": presets(), "top": top_level()}
    assert [p for c in commands(line) for p in check_command(c, known)] == [problem]


@pytest.mark.parametrize("block", [b for b in SHELL if runnable(b)], ids=where)
def test_cheap_shell_snippet_runs(block, tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-e", "-c", block.code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{block.where}:\n{done.stdout}\n{done.stderr}"


# ---- cpp, json ------------------------------------------------------------------------------------

def cpp_includes(code: str) -> list[Path]:
    base = [ROOT / "tests/tooling/stub_cann", ROOT / "op_host/op_api", ROOT / "framework/atb_plugin",
            ROOT / "twin/include", ROOT / "op_kernel"]
    if not re.search(r'#include\s+"(atb/|rms_norm_backward_operation\.h)', code):
        return base
    atb = os.environ.get("ATB_SRC")
    if not atb or not (Path(atb) / "include/atb/operation_infra.h").is_file():
        pytest.skip("this snippet uses ATB: set ATB_SRC to a checkout of github:hicann/ascend-transformer-boost")
    return [Path(atb) / "include", *base]


@pytest.mark.parametrize("block", all_blocks("cpp"), ids=where)
def test_cpp_snippet_compiles(block, tmp_path):
    compiler = os.environ.get("CXX", "g++")
    if shutil.which(compiler) is None:
        pytest.skip(f"no C++ compiler ({compiler}) to compile the snippet with")
    source = tmp_path / "snippet.cpp"
    source.write_text(block.code)
    flags = [f"-I{p}" for p in cpp_includes(block.code)]
    done = subprocess.run([compiler, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", *flags,
                           str(source)], capture_output=True, text=True)
    assert done.returncode == 0, f"{block.where}:\n{done.stderr}"


@pytest.mark.parametrize("block", all_blocks("json"), ids=where)
def test_json_snippet_parses(block):
    json.loads(block.code)
