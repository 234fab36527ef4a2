#!/bin/sh
# User-review regressions: a control character in a group name (ESC, a newline in a quoted
# field) is escaped as \xNN in human tables (analyze, predict), the way error messages are,
# so it never reaches the terminal raw or breaks a row; CSV keeps the exact bytes, quoted.
# Usage: review_escape.sh PFI_BINARY      (ctest cli_review_escape)
set -u
PFI=$1
fail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-review-escape.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
ESC=$(printf '\033')
printf 'g,cap,p,t\na\033[31mRED,400,400,100\na\033[31mRED,300,300,90\n' >"$T/esc.csv"
check analyze-esc 0 "$PFI" analyze --group g --cap cap --power p --throughput t "$T/esc.csv"
if grep -q "$ESC" "$T/out"; then echo "FAIL analyze-esc-raw: an ESC byte in the table"; fail=1
else echo "ok   analyze-esc-raw"; fi
grep_out analyze-esc-escaped 'a\\x1B\[31mRED' "$T/out"
check analyze-esc-csv 0 "$PFI" analyze --group g --cap cap --power p --throughput t \
    --format csv "$T/esc.csv"
grep_out analyze-esc-csv-exact "a${ESC}\[31mRED" "$T/out"
# a quoted name with a newline: one table row per group, the newline shown as \x0A
printf 'g,cap,p,t\n"a\nb",400,400,100\n"a\nb",300,300,90\n' >"$T/nl.csv"
check analyze-nl 0 "$PFI" analyze --group g --cap cap --power p --throughput t "$T/nl.csv"
grep_out analyze-nl-escaped 'a\\x0Ab ' "$T/out"
if grep -q '^b ' "$T/out"; then echo "FAIL analyze-nl-row: the newline broke the row"; cat "$T/out"; fail=1
else echo "ok   analyze-nl-row"; fi
exit $fail
