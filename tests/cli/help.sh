#!/bin/sh
# Every command and subcommand accepts --help (and -h): exit 0, a usage line on stdout,
# nothing on stderr. The commands are those `pfi --help` lists; the subcommands those each
# command's help names as "pfi COMMAND SUB" (stats compare, library generate, control status,
# demo cluster).
# Usage: help.sh PFI_BINARY      (ctest cli_help)
set -u
PFI=$1
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-help.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
n=0
check() { # check ARGS...: pfi ARGS exits 0 with a usage on stdout and a quiet stderr
    n=$((n + 1))
    "$PFI" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "FAIL pfi $*: exit $rc"; cat "$T/err"; fail=1
    elif ! grep -qi 'usage' "$T/out"; then
        echo "FAIL pfi $*: no usage on stdout"; fail=1
    elif [ -s "$T/err" ]; then
        echo "FAIL pfi $*: stderr not empty: $(head -n 2 "$T/err")"; fail=1
    fi
}
check --help
"$PFI" --help >"$T/top" || { echo "FAIL pfi --help"; exit 1; }
cmds=$(awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }' "$T/top")
[ -n "$cmds" ] || { echo "FAIL no commands in pfi --help"; exit 1; }
for c in $cmds; do
    [ "$c" = version ] && continue # pfi version prints the version, not a usage
    check "$c" --help
    check "$c" -h
    check help "$c"
    "$PFI" "$c" --help 2>/dev/null | grep -oE "pfi $c [a-z][a-z-]*" | sort -u >"$T/subs"
    while read -r _ _ sub; do
        check "$c" "$sub" --help
        check "$c" "$sub" -h
    done <"$T/subs"
done
subs=$(for c in $cmds; do "$PFI" "$c" --help 2>/dev/null | grep -oE "pfi $c [a-z][a-z-]*"; done | sort -u | wc -l)
[ "$subs" -ge 4 ] || { echo "FAIL expected at least 4 subcommands in the helps, found $subs"; fail=1; }
[ "$fail" -eq 0 ] && echo "ok   $n help invocations exit 0 with a usage"
exit $fail
