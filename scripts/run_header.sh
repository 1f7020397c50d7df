#!/usr/bin/env bash
# @NAME@: self-extracting custom operator package (this shell header, then a tar.gz payload).
# Options other than the ones below go to the package's install.sh (see --help).
set -euo pipefail
SHA256="@SHA256@"
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
line="$(grep -an '^__PAYLOAD_BELOW__$' "$self" | head -n1 | cut -d: -f1)"
payload() { tail -n +"$((line + 1))" "$self"; }

case "${1:-}" in
    --check)
        [[ "$(payload | sha256sum | cut -d' ' -f1)" == "$SHA256" ]] || { echo "@NAME@: payload checksum mismatch (corrupt download?)" >&2; exit 1; }
        echo "@NAME@: payload checksum OK"; exit 0 ;;
    --list) payload | tar -tzf -; exit 0 ;;
    --extract=*) dest="${1#--extract=}"; mkdir -p "$dest"; payload | tar -xzf - -C "$dest"; echo "extracted to $dest/custom_opp"; exit 0 ;;
esac
[[ "$(payload | sha256sum | cut -d' ' -f1)" == "$SHA256" ]] || { echo "@NAME@: payload checksum mismatch (corrupt download?)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
payload | tar -xzf - -C "$tmp"
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    echo "Package options: --check (verify the payload), --list, --extract=DIR"
fi
"$tmp/custom_opp/install.sh" "$@"
exit $?
__PAYLOAD_BELOW__
