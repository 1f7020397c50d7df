#!/usr/bin/env bash
# Builds build_out/custom_opp_<os>_<arch>.run: a self-extracting archive (a shell header + tar.gz)
# whose payload is the CANN vendor layout plus scripts/install.sh. Without CANN it packages what
# exists (kernel and tiling sources, op info, op proto, generated headers) and lists in
# vendors/<vendor>/MANIFEST what the NPU build with CANN adds; with --build-dir it also takes the
# CANN-built binaries it finds there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
op_def_value() {  # the one source of the vendor and the SoCs is op_def
    PYTHONPATH="$ROOT/python" "$PY" -c "from rmsnorm_backward import op_def; print($1)"
}
VENDOR=""
BUILD_DIR=""
OUT="$ROOT/build_out"

usage() {
    cat <<'USAGE'
Usage: scripts/package.sh [--vendor NAME] [--soc SOC] [--build-dir DIR] [--out DIR]

  --vendor NAME     vendor directory name (default: op_def's vendor)
  --soc SOC         accepted for the NPU build; every SoC of op_def is packaged
  --build-dir DIR   where the NPU preset built the CANN binaries (default: none, sources only)
  --out DIR         where the .run goes (default: build_out)
USAGE
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --vendor) VENDOR="$2"; shift 2 ;;
        --soc) shift 2 ;;
        --build-dir) BUILD_DIR="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "package.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done

[[ -n "$VENDOR" ]] || VENDOR="$(op_def_value 'op_def.load().vendor')"
OP_FILE="$(op_def_value 'op_def.load().file')"
SOCS="$(op_def_value '" ".join(op_def.load().socs)')"
VERSION="$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$ROOT/pyproject.toml" | head -n1)"
OS="$(. /etc/os-release 2>/dev/null && echo "${ID:-linux}" || echo linux)"
ARCH="$(uname -m)"
NAME="custom_opp_${OS}_${ARCH}.run"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
pkg="$work/custom_opp"
v="$pkg/vendors/$VENDOR"
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
printf 'vendor=%s\nversion=%s\nop=%s\n' "$VENDOR" "$VERSION" "$OP_FILE" >"$v/version.info"
cp "$ROOT/scripts/install.sh" "$pkg/install.sh"
cp "$v/version.info" "$pkg/version.info"

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
{
    echo "# $OP_FILE custom operator package $VERSION, vendor $VENDOR, $OS $ARCH"
    echo "# included: paths relative to vendors/$VENDOR"
    (cd "$v" && find . -type f ! -name MANIFEST | sed 's|^\./|included |' | sort)
    echo "# cann: produced by the NPU build with CANN (cmake --preset <soc>); 'absent' when not built here"
    for entry in "${cann_files[@]}"; do
        path="${entry%%|*}"
        built="absent"
        if [[ -n "$BUILD_DIR" && -e "$BUILD_DIR/package/$path" ]]; then
            mkdir -p "$(dirname "$v/$path")"
            cp -R "$BUILD_DIR/package/$path" "$v/$path"
            built="included"
        fi
        echo "cann $built $path  # ${entry#*|}"
    done
} >"$work/MANIFEST"
mv "$work/MANIFEST" "$v/MANIFEST"

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work" -czf "$work/payload.tar.gz" custom_opp
sum="$(sha256sum "$work/payload.tar.gz" | cut -d' ' -f1)"
sed -e "s/@SHA256@/$sum/" -e "s/@NAME@/$NAME/" "$ROOT/scripts/run_header.sh" >"$work/$NAME"
cat "$work/payload.tar.gz" >>"$work/$NAME"
chmod 0755 "$work/$NAME"
mkdir -p "$OUT"
mv -f "$work/$NAME" "$OUT/$NAME"
echo "$OUT/$NAME"
