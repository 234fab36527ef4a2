#!/bin/sh
# Review regressions: a ragged line (too few or too many fields, a column named twice) in the
# telemetry readers' headers (pfi ingest: nvidia-smi CSV, --fields, the replay CSV read back,
# dcgmi dmon, nvidia-smi dmon; also two columns giving one field), the
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
check replay-missing 1 "$PFI" probe --backend replay --replay "$T/nowhere.csv"
grep_out replay-missing-why "nowhere.csv: cannot open replay file: No such file or directory" "$T/err"
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

# --- telemetry headers (pfi ingest): a column named twice, or two giving one field --------
# Read both, they were merged into one series: "power_w 4 valid", job 300 W where the mean
# of the two columns is 200 W. Refused instead, as a parse error (exit 1), naming the file,
# the header's line and the column; nothing stored.
R1='2025/01/01 00:00:00.000, 0, 300 W, 100 W'
R2='2025/01/01 00:00:01.000, 0, 300 W, 100 W'
printf 'timestamp, index, power.draw [W], power.draw [W]\n%s\n%s\n' "$R1" "$R2" >"$T/smi_twice.csv"
check smi-twice 1 "$PFI" ingest --dry-run --telemetry "$T/smi_twice.csv"
grep_out smi-twice-where "smi_twice.csv:1: column 'power.draw \[W\]': column name appears twice in the header (columns 3 and 4" "$T/err"
no_grep smi-twice-no-result "power_w 4 valid" "$T/out"
check smi-twice-db 1 "$PFI" ingest --db "$T/twice.db" --group g --cap 300 --telemetry "$T/smi_twice.csv"
grep_out smi-twice-db-nothing "nothing stored" "$T/err"
# two names of one field (power.draw and power_draw both give power_w): which is meant?
printf 'timestamp, index, power.draw [W], power_draw [W]\n%s\n%s\n' "$R1" "$R2" >"$T/smi_alias.csv"
check smi-alias 1 "$PFI" ingest --dry-run --telemetry "$T/smi_alias.csv"
grep_out smi-alias-where "smi_alias.csv:1: column 'power_draw \[W\]': gives field power_w, as column 'power.draw \[W\]' (column 3) does" "$T/err"
# a header re-printed (appended captures) after 40 rows the block path read
{ echo 'timestamp, index, power.draw [W]'
  for i in $(seq 10 49); do echo "2025/01/01 00:00:$i.000, 0, 300.00 W"; done
  echo 'timestamp, index, power.draw [W], power.draw [W]'
  echo '2025/01/01 00:00:50.000, 0, 300 W, 100 W'; } >"$T/smi_reprint.csv"
check smi-reprint-twice 1 "$PFI" ingest --dry-run --telemetry "$T/smi_reprint.csv"
grep_out smi-reprint-twice-where "smi_reprint.csv:42: column 'power.draw \[W\]': column name appears twice" "$T/err"
# a headerless CSV whose --fields list names a field twice (no line: the list is the header)
printf '%s\n' "$R1" >"$T/smi_noheader.csv"
check smi-fields-twice 1 "$PFI" ingest --dry-run --format nvidia-smi-csv \
    --fields timestamp,index,power.draw,power.draw --telemetry "$T/smi_noheader.csv"
grep_out smi-fields-twice-where "smi_noheader.csv: column 'power.draw': column name appears twice" "$T/err"
# pfi's replay CSV (pfi sweep --record), read back by ingest
printf 't_s,gpu,power_w,power_w\n0,0,300,100\n1,0,300,100\n' >"$T/rec_twice.csv"
check record-twice 1 "$PFI" ingest --dry-run --telemetry "$T/rec_twice.csv"
grep_out record-twice-where "rec_twice.csv:1: column 'power_w': column name appears twice" "$T/err"
# dcgmi dmon: "#Entity" and "# Entity" headers (the value columns from column 2, resp. 3)
printf '#Entity   POWER        POWER\nID\nGPU 0     300          100\nGPU 0     300          100\n' >"$T/dcgmi_twice.txt"
check dcgmi-twice 1 "$PFI" ingest --dry-run --telemetry "$T/dcgmi_twice.txt"
grep_out dcgmi-twice-where "dcgmi_twice.txt:1: column 'POWER': column name appears twice in the header (columns 2 and 3" "$T/err"
printf '# Entity   POWER        DCGM_FI_DEV_POWER_USAGE\nID\nGPU 0     300          100\n' >"$T/dcgmi_alias.txt"
check dcgmi-alias 1 "$PFI" ingest --dry-run --format dcgmi-dmon --telemetry "$T/dcgmi_alias.txt"
grep_out dcgmi-alias-where "dcgmi_alias.txt:1: column 'DCGM_FI_DEV_POWER_USAGE': gives field power_w, as column 'POWER' (column 3) does" "$T/err"
# nvidia-smi dmon: a value column named twice (gpu, Date, Time repeated stay read as before)
printf '# gpu    pwr    pwr\n# Idx      W      W\n    0    300    100\n    0    300    100\n' >"$T/dmon_twice.txt"
check dmon-twice 1 "$PFI" ingest --dry-run --telemetry "$T/dmon_twice.txt"
grep_out dmon-twice-where "dmon_twice.txt:1: column 'pwr': column name appears twice in the header (columns 2 and 3" "$T/err"
# the valid layouts still read: one power column each, mean 200 W
printf 'timestamp, index, power.draw [W]\n2025/01/01 00:00:00.000, 0, 100 W\n2025/01/01 00:00:01.000, 0, 300 W\n' >"$T/smi_ok.csv"
check smi-once 0 "$PFI" ingest --dry-run --telemetry "$T/smi_ok.csv"
grep_out smi-once-mean "power_w 2 valid / 0 missing / 0 out of range, mean 200.0000 W" "$T/out"

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

# --- '#' inside a name is the name's, a comment only at a word's start -----------------------
printf 'feed site - 20000 # the feed\nrack r#1 site 20000 #rack one\n' >"$T/hash.txt"
sed -E 's/,r[0-9]+,/,r#1,/' "$JT" >"$T/jobs_hash.csv"
check topo-hash-name 0 "$PFI" allocate --topology "$T/hash.txt" "$T/jobs_hash.csv" --budget-w 5000
grep_out topo-hash-name-level "r#1" "$T/out"

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
