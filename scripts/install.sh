#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the custom operator package into a CANN OPP tree, the msopgen way:
#   <path>/vendors/<vendor>/{op_api,op_impl,op_proto,framework,bin,version.info,package.info}
#   <path>/vendors/config.ini          load_priority=<vendor>,<other vendors...>
#   <path>/vendors/<vendor>/bin/set_env.bash   puts the vendor directory first in ASCEND_CUSTOM_OPP_PATH
# Runs from the extracted payload of custom_opp_<os>_<arch>.run (the .run passes its options here).
set -euo pipefail

usage() {
    cat <<'USAGE'
Usage: custom_opp_<os>_<arch>.run [--install-path DIR] [--quiet] [--uninstall]

  --install-path DIR  absolute, writable directory to install into (also --install-path=DIR;
                      default: $ASCEND_OPP_PATH, the opp directory of the CANN toolkit that CANN's
                      set_env.sh selected)
  --quiet             print nothing but errors
  --uninstall         remove this vendor's operators from DIR (and from config.ini)
  -h, --help          this text

Installing over an earlier install of the same vendor upgrades it in place.
Afterwards: source DIR/vendors/<vendor>/bin/set_env.bash
USAGE
}

PAYLOAD="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENDOR="$(sed -n 's/^vendor=//p' "$PAYLOAD/package.info")"
VERSION="$(sed -n 's/^version=//p' "$PAYLOAD/package.info")"
ME="${RUN_NAME:-install.sh}"  # messages name the .run the user started
INSTALL_PATH=""
QUIET=0
UNINSTALL=0

die() { echo "$ME: $*" >&2; exit 1; }
bad_option() { echo "$ME: $* (see --help)" >&2; exit 2; }
say() { [[ $QUIET -eq 1 ]] || echo "$@"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --install-path=*) INSTALL_PATH="${1#--install-path=}"; [[ -n "$INSTALL_PATH" ]] || bad_option "--install-path needs a directory" ;;
        --install-path)
            [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || bad_option "--install-path needs a directory"
            INSTALL_PATH="$2"
            shift ;;
        --quiet) QUIET=1 ;;
        --uninstall) UNINSTALL=1 ;;
        -h | --help) usage; exit 0 ;;
        *) bad_option "unknown option '$1'" ;;
    esac
    shift
done

if [[ -z "$INSTALL_PATH" ]]; then
    INSTALL_PATH="${ASCEND_OPP_PATH:-}"
    [[ -n "$INSTALL_PATH" ]] || die "no --install-path DIR given and ASCEND_OPP_PATH is not set (source CANN's set_env.sh or pass --install-path)"
fi
[[ "$INSTALL_PATH" == /* ]] || die "--install-path must be an absolute path, got '$INSTALL_PATH'"
if [[ -e "$INSTALL_PATH" && ! -d "$INSTALL_PATH" ]]; then
    die "--install-path $INSTALL_PATH exists and is not a directory"
fi
# Uninstalling creates nothing: what is not there is reported, not made.
if [[ $UNINSTALL -eq 1 && ! -d "$INSTALL_PATH/vendors/$VENDOR" ]]; then
    die "nothing to uninstall: $INSTALL_PATH/vendors/$VENDOR does not exist"
fi
mkdir -p "$INSTALL_PATH" 2>/dev/null || die "--install-path $INSTALL_PATH cannot be created (is its parent writable?)"
# Probe by writing: `test -w` says yes to root even on read-only file systems.
probe="$(mktemp -p "$INSTALL_PATH" .custom_opp_probe.XXXXXX 2>/dev/null)" || die "--install-path $INSTALL_PATH is not writable"
rm -f "$probe"
INSTALL_PATH="$(cd "$INSTALL_PATH" && pwd -P)"
VENDORS="$INSTALL_PATH/vendors"
TARGET="$VENDORS/$VENDOR"
CONFIG="$VENDORS/config.ini"

# config.ini: load_priority lists vendors, first loaded first; ours goes first (or out, on uninstall).
set_priority() {
    local others=""
    if [[ -f "$CONFIG" ]]; then
        others="$(sed -n 's/^load_priority=//p' "$CONFIG" | tr ',' '\n' | grep -vx -e "$VENDOR" -e '' | paste -sd, - || true)"
    fi
    local list="$others"
    [[ "$1" == add ]] && list="$VENDOR${others:+,$others}"
    if [[ -z "$list" ]]; then
        rm -f "$CONFIG"
    else
        printf 'load_priority=%s\n' "$list" >"$CONFIG.tmp" && mv -f "$CONFIG.tmp" "$CONFIG"
    fi
}

if [[ $UNINSTALL -eq 1 ]]; then
    rm -rf "$TARGET"
    set_priority remove
    rmdir "$VENDORS" 2>/dev/null || true
    say "uninstalled vendor $VENDOR from $INSTALL_PATH"
    exit 0
fi

old=""
[[ -f "$TARGET/package.info" ]] && old="$(sed -n 's/^version=//p' "$TARGET/package.info")"
mkdir -p "$VENDORS"
# Build the new tree beside the old one, then swap: an interrupted upgrade leaves the old install.
staging="$(mktemp -d -p "$VENDORS" ".$VENDOR.new.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
cp -R "$PAYLOAD/packages/vendors/$VENDOR/." "$staging/"
mkdir -p "$staging/bin"
# The paths go in shell-quoted (printf %q), so nothing in them ($, `, quotes) is expanded when sourced.
printf -v target_q '%q' "$TARGET"
printf -v lib_q '%q' "$TARGET/op_api/lib"
cat >"$staging/bin/set_env.bash" <<SETENV
# Source this file to use the $VENDOR custom operators: puts this vendor directory first in
# ASCEND_CUSTOM_OPP_PATH (CANN searches it before the built-in operators) and its op_api
# libraries on LD_LIBRARY_PATH.
_custom_opp_prepend() {
    local value=":\${!1:-}:"
    value="\${value//:\$2:/:}"
    value="\${value#:}"
    value="\${value%:}"
    export "\$1=\$2\${value:+:\$value}"
}
_custom_opp_prepend ASCEND_CUSTOM_OPP_PATH $target_q
_custom_opp_prepend LD_LIBRARY_PATH $lib_q
unset -f _custom_opp_prepend
SETENV
chmod 0644 "$staging/bin/set_env.bash"
if [[ -d "$TARGET" ]]; then
    mv "$TARGET" "$staging.old"
    mv "$staging" "$TARGET"
    rm -rf "$staging.old"
else
    mv "$staging" "$TARGET"
fi
trap - EXIT
set_priority add
if [[ -n "$old" ]]; then
    say "upgraded vendor $VENDOR in $INSTALL_PATH from $old to $VERSION"
else
    say "installed vendor $VENDOR $VERSION into $INSTALL_PATH"
fi
say "to use it: source $TARGET/bin/set_env.bash"
