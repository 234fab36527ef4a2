#!/bin/sh
# Review regressions: a ragged line (too few or too many fields, a column named twice) in the
# topology file (pfi allocate / pfi control --topology), a replay CSV (--backend replay) and a
# simulate library is refused with FILE:LINE naming the field, as pfi allocate's jobs reader
# does; never read shifted or silently cut. A binary topology or agents file is refused as not
# text, its bytes never echoed raw (no note about its last line first).
# Usage: review_ragged.sh PFI_BINARY SOURCE_DIR     (ctest cli_review_ragged)
set -u
PFI=$1
SRC=$2
fail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-review-ragged.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
JT=$SRC/examples/jobs_tree.csv
no_ctl() { # no_ctl NAME FILE: no control byte but newline (ESC, CR, BS, other C0, DEL) in FILE
    if LC_ALL=C tr -d '\n' <"$2" | LC_ALL=C grep -q '[[:cntrl:]]'; then
        echo "FAIL $1: a raw control byte in $2:"; cat -v "$2"; fail=1
    else echo "ok   $1"; fi
}
no_grep() { # no_grep NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "FAIL $1: '$2' in $3"; cat "$3"; fail=1; else echo "ok   $1"; fi
}

# --- the topology file: LEVEL NAME PARENT LIMIT_W [up to 5 options] ----------------------
printf 'feed site - 20000\nrack r1 site\nrack r2 site 9000\n' >"$T/few.txt"
check topo-few 1 "$PFI" allocate --topology "$T/few.txt" "$JT"
grep_out topo-few-where "few.txt:2: column 'LIMIT_W': " "$T/err"
grep_out topo-few-what "got 3 fields: LIMIT_W is missing" "$T/err"
printf 'feed site - 20000\nrack r1\n' >"$T/few2.txt"
check topo-few2 1 "$PFI" allocate --topology "$T/few2.txt" "$JT"
grep_out topo-few2-where "few2.txt:2: column 'PARENT': .*PARENT is missing" "$T/err"
printf 'feed site - 20000\nrack r1 site 9000 reserve source=x ramp_up=1 ramp_down=2 reserve extra more\n' >"$T/many.txt"
check topo-many 1 "$PFI" allocate --topology "$T/many.txt" "$JT"
# eleven words: the count is the line's, not the reader's limit plus one
grep_out topo-many-what "many.txt:2: .*got 11 fields: field 10 'extra' is one too many" "$T/err"
printf 'http://127.0.0.1:1/ 0123456789abcdef0123456789abcdef\n' >"$T/good_agents.txt"
chmod 600 "$T/good_agents.txt"
check topo-few-control 2 "$PFI" control --topology "$T/few.txt" --agents "$T/good_agents.txt" --check
grep_out topo-few-control-where "few.txt:2: column 'LIMIT_W': " "$T/err"

# --- a replay CSV (pfi probe --backend replay) -------------------------------------------
printf 't_s,gpu,power_w\n0,0,300\n1,0\n' >"$T/short.csv"
check replay-short 1 "$PFI" probe --backend replay --replay "$T/short.csv"
grep_out replay-short-where "short.csv:3: expected 3 fields as in the header, found 2" "$T/err"
printf 't_s,gpu,power_w\n0,0,300\n1,0,300,5\n' >"$T/long.csv"
check replay-long 1 "$PFI" probe --backend replay --replay "$T/long.csv"
grep_out replay-long-where "long.csv:3: expected 3 fields as in the header, found 4" "$T/err"
printf 't_s,gpu,power_w,power_w\n0,0,300,200\n' >"$T/twice.csv"
check replay-twice 1 "$PFI" probe --backend replay --replay "$T/twice.csv"
grep_out replay-twice-where "twice.csv:1: column 'power_w': column name appears twice" "$T/err"
printf 't_s,gpu,power_w\n0,x,300\n' >"$T/bad.csv"
check replay-bad-value 1 "$PFI" probe --backend replay --replay "$T/bad.csv"
grep_out replay-bad-value-where "bad.csv:2: column 'gpu': " "$T/err"

# --- a simulate library (a dataset directory's runs) -------------------------------------
"$PFI" library generate --quiet "$T/lib" || { echo "FAIL library generate"; fail=1; }
cp -r "$T/lib" "$T/rag"
sed '3s/,[^,]*$//' "$T/lib/runs.csv" >"$T/rag/runs.csv"
check simulate-ragged 1 "$PFI" simulate --library "$T/rag" --workloads 2 --quiet
grep_out simulate-ragged-where "rag/runs.csv:3: expected 21 fields as in the header, found 20" "$T/err"
cp -r "$T/lib" "$T/dup"
sed '1s/^synthetic,group,/group,group,/' "$T/lib/runs.csv" >"$T/dup/runs.csv"
check simulate-twice 1 "$PFI" simulate --library "$T/dup" --workloads 2 --quiet
grep_out simulate-twice-where "dup/runs.csv:1: column 'group': column name appears twice" "$T/err"

# --- binary topology and agents files ----------------------------------------------------
printf '\037\213\010\000\033[2J\001\002\177 x\nfeed\033 site - 1' >"$T/bin.dat"
check topo-binary 1 "$PFI" allocate --topology "$T/bin.dat" "$JT"
grep_out topo-binary-said "bin.dat:1: a NUL byte: not a text file" "$T/err"
no_grep topo-binary-no-note "last line has no newline" "$T/err"
no_ctl topo-binary-escaped "$T/err"
check topo-binary-pipe 1 sh -c '"$1" allocate --topology - "$2" <"$3"' sh "$PFI" "$JT" "$T/bin.dat"
grep_out topo-binary-pipe-said "not text (a NUL byte at offset 3)" "$T/err"
no_ctl topo-binary-pipe-escaped "$T/err"
# control bytes without a NUL: text, its bytes shown escaped
printf 'feed\033[2J\001 site - 1x\n' >"$T/ctl.txt"
check topo-control-bytes 1 "$PFI" allocate --topology "$T/ctl.txt" "$JT"
grep_out topo-control-bytes-escaped "feed\\\\x1B\[2J\\\\x01 'site'" "$T/err"
no_ctl topo-control-bytes-raw "$T/err"
check agents-binary 2 "$PFI" control --agents "$T/bin.dat" --budget-w 1000 --check
no_ctl agents-binary-escaped "$T/err"
# an agent's URL with control bytes and a short token: the warning shows it escaped
printf 'http://127.0.0.1:1/\033[31m\001 tok\n' >"$T/agents.txt"
chmod 600 "$T/agents.txt"
check agents-url-bytes 2 "$PFI" control --agents "$T/agents.txt" --budget-w 1000 --check
grep_out agents-url-bytes-escaped 'agent http://127.0.0.1:1/\\x1B\[31m\\x01 is short' "$T/err"
no_ctl agents-url-bytes-raw "$T/err"
exit $fail
