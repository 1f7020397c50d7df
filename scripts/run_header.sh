# SPDX-License-Identifier: BSD-3-Clause
# The shell part of custom_opp_<os>_<arch>.run, given to makeself as --header. makeself sources this
# file (twice: once to count its lines into SKIP) and appends the gzip payload after line SKIP.
# It stands in for makeself's own header so that the package takes CANN's option style
# (--install-path DIR, --quiet, --uninstall go to install.sh) and answers a bad option in one
# sentence, where makeself's header would reject any option it does not know with its usage text.
# Every substituted value is one line, so both renderings have the same number of lines (the first
# has no $filesizes yet; SKIP counts lines, not bytes).
# Its first line after #! is POSIX and checks the file's size (the header's SKIP lines plus the
# payload's bytes) before anything else runs, so a download cut anywhere, header included, is refused;
# the next re-runs the file with bash when sh started it.
cat <<EOF >"$archname"
#!/usr/bin/env bash
{ SKIP=$SKIP; SIZE=$filesizes; h=\$(head -n "\$SKIP" -- "\$0" | wc -c); t=\$(wc -c <"\$0"); [ "\$((h + SIZE))" -eq "\$t" ] || { echo "\$(basename -- "\$0"): the package is truncated or corrupt (\$t bytes); download it again" >&2; exit 1; }; }
if [ -z "\${BASH_VERSION:-}" ]; then if command -v bash >/dev/null 2>&1; then exec bash "\$0" "\$@"; fi; echo "\$0: run this package with bash" >&2; exit 2; fi
# $LABEL; made by makeself $MS_VERSION with the project's header (scripts/run_header.sh).
# Package options: --check, --list, --extract DIR (new or empty: nothing is overwritten), --help;
# every other option goes to install.sh.
set -euo pipefail
SHA256="$SHAsum"
NAME="\$(basename "\$0")"
SELF="\$(cd "\$(dirname "\$0")" && pwd)/\$NAME"
payload() { tail -n +\$((SKIP + 1)) "\$SELF"; }
verify() {
    [[ "\$(payload | sha256sum | cut -d' ' -f1)" == "\$SHA256" ]] && return
    echo "\$NAME: payload checksum mismatch (corrupt download?)" >&2
    exit 1
}
unpack() { payload | $GUNZIP_CMD | tar -xf - -C "\$1"; }
case "\${1:-}" in
    --check) verify; echo "\$NAME: payload checksum OK"; exit 0 ;;
    --list) verify; payload | $GUNZIP_CMD | tar -tf - | sed 's|^\./||'; exit 0 ;;
    --extract=* | --extract)
        dest="\${1#--extract}"; dest="\${dest#=}"
        if [[ -z "\$dest" ]]; then
            [[ \$# -ge 2 && -n "\$2" ]] || { echo "\$NAME: --extract needs a directory" >&2; exit 2; }
            dest="\$2"
        fi
        if [[ -e "\$dest" && ( ! -d "\$dest" || -n "\$(ls -A -- "\$dest")" ) ]]; then
            echo "\$NAME: --extract needs a new or empty directory; \$dest is not (nothing is overwritten)" >&2; exit 2
        fi
        verify; mkdir -p "\$dest"; unpack "\$dest"; echo "extracted to \$dest"; exit 0 ;;
    -h | --help) echo "Package options: --check (verify the payload), --list, --extract DIR" ;;
esac
verify
tmp="\$(mktemp -d)"
trap 'rm -rf "\$tmp"' EXIT
unpack "\$tmp"
RUN_NAME="\$NAME" "\$tmp/$SCRIPT" $SCRIPTARGS "\$@"
exit \$?
EOF
