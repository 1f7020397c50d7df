# SPDX-License-Identifier: BSD-3-Clause
"""The .run package end to end: a makeself archive; build it, install into temporary directories,
upgrade, uninstall, set_env.bash, config.ini, version.info, the CANN-built files of an NPU build,
and the bad options and --install-path cases."""
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from rmsnorm_backward import op_def, resources

ROOT = resources.checkout()
OP = op_def.load()
VENDOR = OP.vendor


@pytest.fixture(scope="module")
def run_file(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pkg")
    proc = subprocess.run([str(ROOT / "scripts" / "package.sh"), "--out", str(out)],
                          capture_output=True, text=True, check=True)
    (run,) = out.glob("custom_opp_*_*.run")
    assert proc.stdout.strip() == str(run)
    return run


def install(run: Path, *args, env=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in (env or os.environ).items() if k != "ASCEND_OPP_PATH"}
    return subprocess.run([str(run), *args], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)


def set_env_result(vendor_dir: Path, before: str | None) -> str:
    prefix = f"export ASCEND_CUSTOM_OPP_PATH={before}; " if before is not None else "unset ASCEND_CUSTOM_OPP_PATH; "
    return subprocess.run(["bash", "-c", prefix + f"source {shlex.quote(str(vendor_dir))}/bin/set_env.bash; "
                           "echo \"$ASCEND_CUSTOM_OPP_PATH\""],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_install_lays_out_the_cann_vendor_tree(run_file, tmp_path):
    proc = install(run_file, f"--install-path={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    v = tmp_path / "vendors" / VENDOR
    for d in ("op_api", "op_impl", "op_proto", "framework", "bin"):
        assert (v / d).is_dir()
    assert (v / "op_api/include/aclnn_rms_norm_backward.h").is_file()
    assert (v / "op_proto/inc/rms_norm_backward_proto.h").is_file()
    for soc in OP.socs:
        assert (v / f"op_impl/ai_core/tbe/config/{soc}/aic-{soc}-ops-info.json").is_file()
    assert (v / f"op_impl/ai_core/tbe/{VENDOR}_impl/dynamic/rms_norm_backward.cpp").is_file()
    assert (v / "version.info").read_text() == "custom_opp_compiler_version=\n"  # CANN's form; no CANN here
    assert (v / "op_impl/ai_core/tbe/op_tiling/src/rms_norm_backward_def.cpp").is_file()
    assert (tmp_path / "vendors/config.ini").read_text() == f"load_priority={VENDOR}\n"
    assert f"source {v}/bin/set_env.bash" in proc.stdout


def test_manifest_lists_every_packaged_file_and_what_cann_adds(run_file, tmp_path):
    assert install(run_file, f"--install-path={tmp_path}", "--quiet").returncode == 0
    v = tmp_path / "vendors" / VENDOR
    lines = (v / "MANIFEST").read_text().splitlines()
    included = {line.split(" ", 1)[1] for line in lines if line.startswith("included ")}
    on_disk = {str(p.relative_to(v)) for p in v.rglob("*") if p.is_file()} - {"MANIFEST", "bin/set_env.bash"}
    assert included == on_disk
    cann = [line for line in lines if line.startswith("cann ")]
    assert any("op_api/lib/libcust_opapi.so" in line for line in cann)
    assert all(line.startswith("cann absent ") for line in cann)  # nothing CANN-built here
    for soc in OP.socs:
        assert any(f"op_impl/ai_core/tbe/kernel/{soc}/" in line for line in cann)


@pytest.mark.parametrize("before", [None, "", "/opt/other", "/opt/other:{v}", "{v}:/opt/other"])
def test_set_env_puts_the_vendor_path_first_exactly_once(run_file, tmp_path, before):
    assert install(run_file, f"--install-path={tmp_path}", "--quiet").returncode == 0
    v = tmp_path / "vendors" / VENDOR
    got = set_env_result(v, before.format(v=v) if before is not None else None).split(":")
    assert got[0] == str(v)
    assert got.count(str(v)) == 1
    if before and "/opt/other" in before:
        assert "/opt/other" in got


def test_upgrade_replaces_an_earlier_install(run_file, tmp_path):
    assert install(run_file, f"--install-path={tmp_path}", "--quiet").returncode == 0
    v = tmp_path / "vendors" / VENDOR
    (v / "package.info").write_text(f"vendor={VENDOR}\nversion=0.0.1\n")
    (v / "op_proto/inc/stale_from_old_version.h").write_text("// old\n")
    (v / "op_api/include/aclnn_rms_norm_backward.h").write_text("// damaged\n")
    proc = install(run_file, f"--install-path={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    assert "upgraded vendor" in proc.stdout and "from 0.0.1 to" in proc.stdout
    assert not (v / "op_proto/inc/stale_from_old_version.h").exists()
    assert (v / "op_api/include/aclnn_rms_norm_backward.h").read_text() == \
        (ROOT / "op_host/op_api/aclnn_rms_norm_backward.h").read_text()
    assert sorted(p.name for p in (tmp_path / "vendors").iterdir()) == sorted([VENDOR, "config.ini"])


def test_other_vendors_keep_their_priority_through_install_and_uninstall(run_file, tmp_path):
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors/config.ini").write_text("load_priority=acme,mlops\n")
    assert install(run_file, f"--install-path={tmp_path}", "--quiet").returncode == 0
    assert (tmp_path / "vendors/config.ini").read_text() == f"load_priority={VENDOR},acme,mlops\n"
    proc = install(run_file, f"--install-path={tmp_path}", "--uninstall")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "vendors/config.ini").read_text() == "load_priority=acme,mlops\n"


def test_uninstall_removes_the_vendor_and_its_priority(run_file, tmp_path):
    assert install(run_file, f"--install-path={tmp_path}", "--quiet").returncode == 0
    proc = install(run_file, f"--install-path={tmp_path}", "--uninstall", "--quiet")
    assert proc.returncode == 0 and proc.stdout == ""
    assert not (tmp_path / "vendors").exists()
    again = install(run_file, f"--install-path={tmp_path}", "--uninstall")
    assert again.returncode != 0
    assert again.stderr.strip() == f"{run_file.name}: nothing to uninstall: {tmp_path}/vendors/{VENDOR} does not exist"


def test_quiet_install_prints_nothing(run_file, tmp_path):
    proc = install(run_file, f"--install-path={tmp_path}", "--quiet")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


@pytest.mark.parametrize(("path", "message"), [
    ("relative/dir", "--install-path must be an absolute path, got 'relative/dir'"),
    ("/proc", "--install-path /proc is not writable"),
    ("/proc/no/such/dir", "--install-path /proc/no/such/dir cannot be created (is its parent writable?)"),
    ("{file}", "--install-path {file} exists and is not a directory"),
])
def test_bad_install_path_is_one_clear_sentence(run_file, tmp_path, path, message):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    path, message = path.format(file=a_file), message.format(file=a_file)
    proc = install(run_file, f"--install-path={path}")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [f"{run_file.name}: {message}"]
    assert list(tmp_path.iterdir()) == [a_file]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a mode 0555 directory")
def test_read_only_directory_is_refused(run_file, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    proc = install(run_file, f"--install-path={ro}")
    assert proc.stderr.strip() == f"{run_file.name}: --install-path {ro} is not writable"


def test_no_install_path_and_no_cann_is_one_clear_sentence(run_file):
    proc = install(run_file)
    assert proc.returncode != 0
    assert "no --install-path DIR given and ASCEND_OPP_PATH is not set" in proc.stderr


def test_corrupt_package_is_refused_before_installing(run_file, tmp_path):
    broken = tmp_path / run_file.name
    data = bytearray(run_file.read_bytes())
    data[-100] ^= 0xFF
    broken.write_bytes(bytes(data))
    broken.chmod(0o755)
    proc = install(broken, f"--install-path={tmp_path / 'opp'}")
    assert proc.returncode != 0 and "payload checksum mismatch" in proc.stderr
    assert not (tmp_path / "opp").exists()
    assert install(run_file, "--check").returncode == 0


def test_the_run_is_a_makeself_archive_with_the_cann_payload(run_file):
    head = run_file.read_bytes()[:2000].decode(errors="replace")
    assert "made by makeself 2." in head and "scripts/run_header.sh" in head
    listed = install(run_file, "--list").stdout.split()
    assert "install.sh" in listed and "package.info" in listed
    assert f"packages/vendors/{VENDOR}/op_api/include/aclnn_rms_norm_backward.h" in listed


@pytest.mark.parametrize("form", ["space", "equals"])
def test_install_path_takes_both_forms(run_file, tmp_path, form):
    args = ["--install-path", str(tmp_path)] if form == "space" else [f"--install-path={tmp_path}"]
    proc = install(run_file, *args, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "vendors" / VENDOR / "bin/set_env.bash").is_file()
    proc = install(run_file, "--uninstall", *args)
    assert proc.returncode == 0 and not (tmp_path / "vendors").exists()


def test_uninstall_with_nothing_installed_creates_nothing(run_file, tmp_path):
    target = tmp_path / "never_made"
    proc = install(run_file, "--uninstall", "--install-path", str(target))
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"{run_file.name}: nothing to uninstall: {target}/vendors/{VENDOR} does not exist"
    assert not target.exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--install-path"], "--install-path needs a directory"),
    (["--install-path", "--quiet"], "--install-path needs a directory"),
    (["--install-path="], "--install-path needs a directory"),
    (["--force"], "unknown option '--force'"),
    (["install"], "unknown option 'install'"),
])
def test_bad_options_are_one_sentence_and_exit_2(run_file, tmp_path, args, message):
    proc = install(run_file, *args)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"{run_file.name}: {message} (see --help)"]
    assert list(tmp_path.iterdir()) == []


def test_extract_takes_both_forms_and_needs_a_directory(run_file, tmp_path):
    for args in (["--extract", str(tmp_path / "a")], [f"--extract={tmp_path / 'b'}"]):
        assert install(run_file, *args).returncode == 0
        assert (Path(args[-1].removeprefix("--extract=")) / "install.sh").is_file()
    proc = install(run_file, "--extract")
    assert proc.returncode == 2 and proc.stderr.strip() == f"{run_file.name}: --extract needs a directory"


def test_package_takes_the_cann_built_files_of_an_npu_build(tmp_path):
    # The tree `cmake --install` lays out for an NPU build (files made here, not by CANN).
    built = tmp_path / "install/packages/vendors" / VENDOR
    arch = os.uname().machine
    made = {"op_api/lib/libcust_opapi.so": "opapi", f"op_proto/lib/linux/{arch}/libcust_opsproto_rt2.0.so": "proto",
            f"op_impl/ai_core/tbe/kernel/config/{OP.socs[0]}/{OP.file}.json": "{}",
            "version.info": "custom_opp_compiler_version=8.5.0\n"}
    for rel, text in made.items():
        (built / rel).parent.mkdir(parents=True, exist_ok=True)
        (built / rel).write_text(text)
    subprocess.run([str(ROOT / "scripts/package.sh"), "--build-dir", str(tmp_path / "install"), "--out", str(tmp_path)],
                   capture_output=True, text=True, check=True)
    (run,) = tmp_path.glob("custom_opp_*.run")
    opp = tmp_path / "opp"
    assert install(run, f"--install-path={opp}", "--quiet").returncode == 0
    v = opp / "vendors" / VENDOR
    for rel, text in made.items():
        assert (v / rel).read_text() == text
    manifest = (v / "MANIFEST").read_text()
    assert "cann included op_api/lib/libcust_opapi.so" in manifest
    assert f"cann absent op_impl/ai_core/tbe/kernel/{OP.socs[0]}/{OP.file}/" in manifest


@pytest.mark.parametrize(("args", "message"), [
    (["--out"], "--out needs a value (see --help)"),
    (["--soc", "ascend910b"], "unknown option '--soc' (see --help)"),
    (["--build-dir", "/nonexistent"], "--build-dir /nonexistent holds no packages/vendors/{vendor} (run cmake --install first)"),
])
def test_package_sh_bad_options_are_one_sentence(args, message):
    proc = subprocess.run([str(ROOT / "scripts/package.sh"), *args], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"package.sh: {message.format(vendor=VENDOR)}"]


@pytest.mark.parametrize("keep", [60, 300, 1500, -4096, -1], ids=lambda k: f"cut at {k}")
def test_a_truncated_package_is_refused_header_included(run_file, tmp_path, keep):
    cut = tmp_path / run_file.name
    data = run_file.read_bytes()
    cut.write_bytes(data[:keep])
    cut.chmod(0o755)
    proc = install(cut, f"--install-path={tmp_path / 'opp'}")
    check_line_end = len(b"\n".join(data.split(b"\n", 2)[:2]))
    if 0 < keep < check_line_end:  # inside the size check itself: the shell's own syntax error
        assert proc.returncode == 2 and "unexpected" in proc.stderr.lower(), proc.stderr
    else:
        assert proc.returncode == 1
        assert proc.stderr.strip() == (f"{cut.name}: the package is truncated or corrupt ({len(data[:keep])} bytes); "
                                       "download it again")
    assert not (tmp_path / "opp").exists()


def test_sh_runs_the_package_with_bash(run_file, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ASCEND_OPP_PATH"}
    proc = subprocess.run(["sh", str(run_file), "--install-path", str(tmp_path), "--quiet"], capture_output=True,
                          text=True, env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert (tmp_path / "vendors" / VENDOR / "bin/set_env.bash").is_file()


def test_extract_never_overwrites_a_users_file(run_file, tmp_path):
    mine = tmp_path / "install.sh"
    mine.write_text("mine\n")
    proc = install(run_file, "--extract", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"{run_file.name}: --extract needs a new or empty directory; {tmp_path} is not "
                                   "(nothing is overwritten)")
    assert mine.read_text() == "mine\n" and [p.name for p in tmp_path.iterdir()] == ["install.sh"]


def test_set_env_takes_an_install_path_literally(run_file, tmp_path):
    place = tmp_path / "a $HOME `id` $(id) 'q' \"d\" \\ b"
    place.mkdir()
    assert install(run_file, "--install-path", str(place), "--quiet").returncode == 0
    assert set_env_result(place / "vendors" / VENDOR, None) == str(place / "vendors" / VENDOR)
