#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds build_out/custom_opp_<os>_<arch>.run the way CANN packages custom operators: a makeself
# archive (header scripts/run_header.sh) whose payload is install.sh and the CANN vendor layout
# packages/vendors/<vendor>/{op_api,op_impl,op_proto,framework}. Without CANN it packages what
# exists (kernel and tiling sources, op info, op proto, generated headers) and lists in
# vendors/<vendor>/MANIFEST what the NPU build with CANN adds; with --build-dir (where the NPU build
# installed its packages/ tree) it takes the CANN-built files from there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
op_def_value() {  # the one source of the vendor and the SoCs is op_def
    PYTHONPATH="$ROOT/python:$ROOT/twin/python" "$PY" -c "from rmsnorm_backward import op_def; print($1)"
}
VENDOR=""
BUILD_DIR=""
CANN=""
OUT="$ROOT/build_out"

usage() {
    cat <<'USAGE'
Usage: scripts/package.sh [--vendor NAME] [--build-dir DIR] [--cann DIR] [--out DIR]

  --vendor NAME     vendor directory name (default: op_def's vendor)
  --build-dir DIR   where the NPU build installed packages/vendors/<vendor> (default: none, sources only)
  --cann DIR        the CANN toolkit the NPU build used: version.info names its compiler version
  --out DIR         where the .run goes (default: build_out)
USAGE
}

die() { echo "package.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --vendor | --build-dir | --cann | --out)
            [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value (see --help)"
            case "$1" in
                --vendor) VENDOR="$2" ;;
                --build-dir) BUILD_DIR="$2" ;;
                --cann) CANN="$2" ;;
                --out) OUT="$2" ;;
            esac
            shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done
command -v makeself >/dev/null || die "makeself is not installed (Debian/Ubuntu: apt-get install makeself; ./build.sh setup does it)"

[[ -n "$VENDOR" ]] || VENDOR="$(op_def_value 'op_def.load().vendor')"
OP_FILE="$(op_def_value 'op_def.load().file')"
SOCS="$(op_def_value '" ".join(op_def.load().socs)')"
VERSION="$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$ROOT/pyproject.toml" | head -n1)"
OS="$(. /etc/os-release 2>/dev/null && echo "${ID:-linux}" || echo linux)"
ARCH="$(uname -m)"
NAME="custom_opp_${OS}_${ARCH}.run"
BUILT=""
[[ -z "$BUILD_DIR" ]] || BUILT="$BUILD_DIR/packages/vendors/$VENDOR"
[[ -z "$BUILT" || -d "$BUILT" ]] || die "--build-dir $BUILD_DIR holds no packages/vendors/$VENDOR (run cmake --install first)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
pkg="$work/custom_opp"
v="$pkg/packages/vendors/$VENDOR"
tbe="$v/op_impl/ai_core/tbe"
mkdir -p "$v"/{op_api/include,op_proto/inc,framework,bin} "$tbe/${VENDOR}_impl/dynamic" "$tbe/op_tiling/src"

cp "$ROOT"/op_host/op_api/*.h "$v/op_api/include/"
cp "$ROOT"/op_host/op_proto/*.h "$v/op_proto/inc/"
for soc in $SOCS; do
    mkdir -p "$tbe/config/$soc"
    cp "$ROOT/op_host/op_info/aic-$soc-ops-info.json" "$tbe/config/$soc/"
done
cp "$ROOT"/op_kernel/*.cpp "$ROOT"/op_kernel/*.h "$tbe/${VENDOR}_impl/dynamic/"
cp -R "$ROOT"/op_host/*.cpp "$ROOT"/op_host/*.h "$ROOT/op_host/tiling" "$tbe/op_tiling/src/"
# version.info as CANN's build writes it (the compiler version of the toolkit; empty without one),
# and this package's own facts for install.sh beside it.
compiler=""
[[ -z "$CANN" ]] || compiler="$(sed -n 's/^Version=//p' "$CANN/compiler/version.info" 2>/dev/null | head -n1)"
printf 'custom_opp_compiler_version=%s\n' "$compiler" >"$v/version.info"
printf 'vendor=%s\nversion=%s\nop=%s\n' "$VENDOR" "$VERSION" "$OP_FILE" >"$v/package.info"
cp "$v/package.info" "$pkg/package.info"
cp "$ROOT/scripts/install.sh" "$pkg/install.sh"

# What the NPU build with CANN produces, where it goes, and what it is.
cann_files=(
    "op_api/lib/libcust_opapi.so|the aclnn entry points aclnnRmsNormBackwardGetWorkspaceSize/aclnnRmsNormBackward"
    "op_impl/ai_core/tbe/op_tiling/lib/linux/$ARCH/libcust_opmaster_rt2.0.so|OpDef registration, TilingFunc, InferShape/InferDataType"
    "op_proto/lib/linux/$ARCH/libcust_opsproto_rt2.0.so|the graph-mode operator prototype"
)
for soc in $SOCS; do
    cann_files+=("op_impl/ai_core/tbe/kernel/$soc/$OP_FILE/|kernel binaries (.o + .json per tiling key) compiled by CANN for $soc")
    cann_files+=("op_impl/ai_core/tbe/kernel/config/$soc/$OP_FILE.json|the binary kernel index for $soc")
done
[[ -z "$BUILT" ]] || cp -R "$BUILT/." "$v/"  # the CANN-built files, over the sources
{
    echo "# $OP_FILE custom operator package $VERSION, vendor $VENDOR, $OS $ARCH"
    echo "# included: paths relative to vendors/$VENDOR"
    (cd "$v" && find . -type f ! -name MANIFEST | sed 's|^\./|included |' | sort)
    echo "# cann: produced by the NPU build with CANN (cmake --preset <soc>); 'absent' when not built here"
    for entry in "${cann_files[@]}"; do
        path="${entry%%|*}"
        built="absent"
        [[ -n "$BUILT" && -e "$BUILT/$path" ]] && built="included"
        echo "cann $built $path  # ${entry#*|}"
    done
} >"$work/MANIFEST"
mv "$work/MANIFEST" "$v/MANIFEST"

mkdir -p "$OUT"
# Reproducible: sorted names, no owners, a fixed date; makeself checks the payload with sha256.
makeself --quiet --header "$ROOT/scripts/run_header.sh" --gzip --complevel 6 --sha256 --nomd5 --nocrc \
    --tar-format posix --tar-extra "--owner=0 --group=0 --numeric-owner --mtime=@0" --packaging-date "@0" \
    "$pkg" "$work/$NAME" "$OP_FILE custom operator package $VERSION, vendor $VENDOR, $OS $ARCH" ./install.sh \
    >/dev/null
mv -f "$work/$NAME" "$OUT/$NAME"
echo "$OUT/$NAME"
