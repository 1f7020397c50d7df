#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The project's entry point, msopgen style. Needs python3, g++ and cmake; everything else
# (virtual environment, Python packages, the native extension) is prepared on first use.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
STAMP="$VENV/.rmsnorm_backward-installed"

usage() {
    cat <<'EOF'
Usage: ./build.sh [command] [args]

  build [--preset NAME]
                the default (msopgen style): with CANN (ASCEND_HOME_PATH, or CANN's default
                install path) the NPU preset (ASCEND_COMPUTE_UNIT, default ascend910b) is built and
                packaged into build_out/; without CANN the cpu preset builds the twin extension
  run [ARGS]    the main job: prepare the environment, then `rmsnorm-backward golden [ARGS]`
  test [ARGS]   prepare the environment, then run the test suite, one worker per core (ARGS go to pytest; -n 0 runs it in one process)
  setup         only prepare: .venv, Python dependencies, editable install + native build
  package       build build_out/custom_opp_<os>_<arch>.run (scripts/package.sh --help)
  clean         remove .venv, build/ and twin/build/ (the kernel cache lives in $ASCENDC_TWIN_CACHE
                or ~/.cache/ascendc_twin)
  -h, --help    this text

No NPU or CANN is needed: kernels run on the project's CPU twin of the Ascend C API.
EOF
}

# A venv that reuses the image's packages when they fit, but installs every dependency explicitly
# so a fresh machine works too. Re-done only when pyproject.toml or a CMakeLists.txt changes; after that
# the editable install rebuilds the extension on import when its sources change.
# Tools the package and its tests need beyond Python: makeself builds the .run (CANN's way). Installed
# with apt-get where that is possible (root on Debian/Ubuntu), otherwise named.
system_tools() {
    command -v makeself >/dev/null && return
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "build.sh: installing makeself (apt-get)"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq makeself >/dev/null
    else
        echo "build.sh: makeself is missing (it builds the .run package): install it, e.g. sudo apt-get install makeself" >&2
        exit 1
    fi
}

setup() {
    system_tools
    local want
    want="$(cat "$ROOT/pyproject.toml" "$ROOT/CMakeLists.txt" "$ROOT/twin/CMakeLists.txt" | sha256sum | cut -d' ' -f1)"
    if [[ -x "$PY" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
        return
    fi
    echo "build.sh: preparing .venv and building the extension (first run takes a few minutes)"
    [[ -x "$PY" ]] || python3 -m venv --system-site-packages "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
    "$PY" -m pip install --quiet scikit-build-core pybind11 \
        numpy ml_dtypes jinja2 tqdm click matplotlib pytest pytest-xdist hypothesis expecttest torch==2.13.0 "transformers>=5,<6" \
        megatron-core==0.16.1 kernels==0.19.1  # test-only: integrations.megatron and .hf_kernels
    # The twin first, editable, with its test extras; then the operator editable without resolving its
    # dependencies again (pip would replace the editable twin by a copy built from file:./twin).
    "$PY" -m pip install --quiet --no-build-isolation -e "$ROOT/twin[test]"
    "$PY" -m pip install --quiet --no-build-isolation --no-deps -e "$ROOT[test,plot]"
    echo "$want" >"$STAMP"
}

run_tests() {
    local rc=0 workers=(-n auto --dist loadfile)
    # One pytest worker per core, a test file per worker (its fixtures built once); -n/-p given by
    # the caller (e.g. -n 0, -p no:xdist) take precedence.
    for arg in "$@"; do
        case "$arg" in -n | -n* | --numprocesses* | no:xdist) workers=() ;; esac
    done
    (cd "$ROOT" && "$PY" -m pytest "${workers[@]}" "$@") || rc=$?
    if [[ $rc -eq 5 ]]; then
        echo "build.sh: pytest collected no tests; that is a failure, not a pass" >&2
    fi
    return $rc
}

main_job() {
    # The main job: the original operator text's example (x [32,64,128] fp32) against the golden.
    "$VENV/bin/rmsnorm-backward" golden "$@"
}

# CANN's toolkit root, or nothing: the same places cmake/npu.cmake looks (its default list is one file).
find_cann() {
    local dir defaults
    mapfile -t defaults < <(grep -v '^#' "$ROOT/cmake/cann_default_paths.txt")
    for dir in "${ASCEND_HOME_PATH:-}" "${defaults[@]}"; do
        if [[ -n "$dir" && -f "$dir/include/acl/acl.h" ]]; then
            echo "$dir"
            return
        fi
    done
}

build() {
    local preset=""
    if [[ "${1:-}" == "--preset" ]]; then
        [[ $# -ge 2 ]] || { echo "build.sh: --preset needs a name (cpu, ascend910b or ascend910_93)" >&2; exit 2; }
        preset="$2"
    elif [[ $# -gt 0 ]]; then
        echo "build.sh: build takes only --preset NAME (got '$1')" >&2
        exit 2
    fi
    if [[ -z "$preset" ]]; then
        if [[ -n "$(find_cann)" ]]; then preset="${ASCEND_COMPUTE_UNIT:-ascend910b}"; else preset=cpu; fi
    fi
    echo "build.sh: building the $preset preset"
    cd "$ROOT"
    cmake --preset "$preset"
    # CANN's order for an operator package: the binary kernels, everything else, then the .run.
    [[ "$preset" == cpu ]] || cmake --build --preset "$preset" --target binary
    cmake --build --preset "$preset"
    [[ "$preset" == cpu ]] || cmake --build --preset "$preset" --target package  # build_out/custom_opp_<os>_<arch>.run
}

cmd="${1:-build}"
[[ $# -gt 0 ]] && shift
case "$cmd" in
    build) build "$@" ;;
    run) setup; main_job "$@" ;;
    test) setup; run_tests "$@" ;;
    setup) setup ;;
    package) "$ROOT/scripts/package.sh" "$@" ;;  # build_out/custom_opp_<os>_<arch>.run
    clean) rm -rf "$VENV" "$ROOT/build" "$ROOT/twin/build" ;;
    -h | --help | help) usage ;;
    *) usage >&2; exit 2 ;;
esac
