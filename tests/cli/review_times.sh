#!/bin/sh
# User-review regressions: impossible timestamps refused with FILE:LINE, the column and the
# text (never rolled into another day); unknown --fields names refused up front; the power
# line says why there is no job power; a last line without a newline noted by analyze and
# allocate as by ingest.
# Usage: review_times.sh PFI_BINARY SOURCE_DIR      (ctest cli_review_times)
set -u
PFI=$1
SRC=$2
fail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-review-times.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
no_out() { # no_out NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "FAIL $1: '$2' in $3"; cat "$3"; fail=1; else echo "ok   $1"; fi
}
H='timestamp, index, power.draw [W]'
smi() { # smi FILE STAMP3: four rows of GPU 0, the third at STAMP3
    printf '%s\n2025/11/02 14:20:01.004, 0, 301.22 W\n2025/11/02 14:20:02.004, 0, 300 W\n%s, 0, 300 W\n2025/11/02 14:20:04.004, 0, 300 W\n' "$H" "$2" >"$1"
}

# 1. Feb 30 is no date: refused (exit 1) naming file, line, column and text; the old reader
# took it as March 2 ("time jumped back") and exited 0.
smi "$T/t5.csv" '2025/02/30 14:20:03.004'
check feb30 1 "$PFI" ingest --dry-run --telemetry "$T/t5.csv"
grep_out feb30-where "t5.csv:4: column 1 (timestamp): '2025/02/30 14:20:03.004' is not a valid time" "$T/err"
no_out feb30-no-jump "jumped back" "$T/err"
# Feb 29 only in a leap year (2024 is one, 2100 is not); 24:00 and minute 60 are no times.
printf '%s\n2024/02/28 23:59:59.000, 0, 300 W\n2024/02/29 00:00:00.000, 0, 300 W\n2024/02/29 00:00:01.000, 0, 300 W\n' "$H" >"$T/leap.csv"
check feb29-leap 0 "$PFI" ingest --dry-run --telemetry "$T/leap.csv"
smi "$T/nl.csv" '2025/02/29 14:20:03.004'
check feb29-2025 1 "$PFI" ingest --dry-run --telemetry "$T/nl.csv"
grep_out feb29-2025-where "nl.csv:4: .*'2025/02/29 14:20:03.004' is not a valid time" "$T/err"
smi "$T/c.csv" '2100-02-29 14:20:03'
check feb29-2100 1 "$PFI" ingest --dry-run --telemetry "$T/c.csv"
smi "$T/h24.csv" '2025/11/02 24:00:00.000'
check hour24 1 "$PFI" ingest --dry-run --telemetry "$T/h24.csv"
grep_out hour24-where "h24.csv:4: column 1 (timestamp): '2025/11/02 24:00:00.000' is not a valid time" "$T/err"
smi "$T/m60.csv" '2025/11/02 14:60:03.004'
check minute60 1 "$PFI" ingest --dry-run --telemetry "$T/m60.csv"
smi "$T/apr31.csv" '2025-04-31T14:20:03Z'
check apr31-iso 1 "$PFI" ingest --dry-run --telemetry "$T/apr31.csv"
grep_out apr31-iso-where "apr31.csv:4: .*'2025-04-31T14:20:03Z' is not a valid time" "$T/err"
# A word for a timestamp: the line and the text, not "nominal times ... 55.84 years".
smi "$T/nad.csv" 'not-a-date'
check not-a-date 1 "$PFI" ingest --dry-run --telemetry "$T/nad.csv"
grep_out not-a-date-where "nad.csv:4: column 1 (timestamp): 'not-a-date' is not a valid time" "$T/err"
no_out not-a-date-no-nominal "nominal times" "$T/err"
# Many rows (the block path of the reader): the bad one is still named.
{ echo "$H"; i=0; while [ $i -lt 200 ]; do printf '2025/11/02 14:%02d:%02d.000, 0, 300 W\n' $((i / 60)) $((i % 60)); i=$((i + 1)); done
  echo "2025/06/31 14:03:20.000, 0, 300 W"; } >"$T/long.csv"
check block-path 1 "$PFI" ingest --dry-run --telemetry "$T/long.csv"
grep_out block-path-where "long.csv:202: column 1 (timestamp): '2025/06/31 14:03:20.000' is not a valid time" "$T/err"

# nvidia-smi dmon -o DT: the same rule (a bad date was skipped with a note before).
D='#Date       Time        gpu    pwr\n#YYYYMMDD   HH:MM:SS    Idx      W\n'
printf "$D"'20250514   10:00:00      0    250\n20250230   10:00:01      0    251\n' >"$T/dmon.txt"
check dmon-feb30 1 "$PFI" ingest --dry-run --telemetry "$T/dmon.txt"
grep_out dmon-feb30-where "dmon.txt:4: .*'20250230 10:00:01' is not a valid time" "$T/err"
printf "$D"'20240229   10:00:00      0    250\n20240229   10:00:01      0    251\n' >"$T/dmon29.txt"
check dmon-feb29-leap 0 "$PFI" ingest --dry-run --telemetry "$T/dmon29.txt"

# nvidia-smi -q: a Timestamp that is no time is refused on its line (was: nominal times).
Q=$SRC/tests/cases/case-17/nvsmi_q_d_power.txt
check q-good 0 "$PFI" ingest --dry-run --telemetry "$Q"
sed '0,/^Timestamp.*/s//Timestamp : Sat Feb 29 10:00:00 2025/' "$Q" >"$T/q.txt"
check q-feb29-2025 1 "$PFI" ingest --dry-run --telemetry "$T/q.txt"
grep_out q-feb29-2025-where "q.txt:4: Timestamp: 'Sat Feb 29 10:00:00 2025' is not a valid time" "$T/err"

# nvidia-smi -q -x: the same for <timestamp>.
X=$SRC/tests/fuzz/corpus/smi_xml/looped_timestamp_uuid.xml
check x-good 0 "$PFI" ingest --dry-run --telemetry "$X"
sed '0,/<timestamp>[^<]*</s//<timestamp>Sat Feb 29 10:00:00 2025</' "$X" >"$T/x.xml"
check x-feb29-2025 1 "$PFI" ingest --dry-run --telemetry "$T/x.xml"
grep_out x-feb29-2025-where "x.xml:4: <timestamp>: 'Sat Feb 29 10:00:00 2025' is not a valid time" "$T/err"

# 2. --fields names: an unknown one refused before reading (exit 2), naming it; an nvidia-smi
# query name the table does not list (memory.used) is still taken.
check fields-bogus 2 "$PFI" ingest --format nvidia-smi-csv --fields bogus --telemetry "$SRC/examples/noheader.csv"
grep_out fields-bogus-name "--fields: unknown field 'bogus'" "$T/err"
no_out fields-bogus-no-rows "row has" "$T/err"
printf '2025/11/02 14:20:01.004, 0, 301 W, 100 MiB\n2025/11/02 14:20:02.004, 0, 302 W, 100 MiB\n' >"$T/nh.csv"
check fields-query-name 0 "$PFI" ingest --dry-run --fields 'timestamp, index, power.draw, memory.used' --telemetry "$T/nh.csv"

# 3. No job power: the power line says why.
check warmup-all 1 "$PFI" ingest --dry-run --telemetry "$SRC/examples/smi.csv" --warmup 10
grep_out warmup-all-why "^power: power_w: none (every complete timestamp within the warm-up" "$T/out"

# 4. A last line without its newline: a note from analyze and allocate (not a refusal).
head -c -1 "$SRC/examples/runs.csv" >"$T/runs.csv"
M="--group model,task,gpus --cap cap_w --power power_w --throughput tokens_per_s"
check analyze-cut 0 "$PFI" analyze "$T/runs.csv" $M
grep_out analyze-cut-note "note: .*runs.csv:11: the last line has no newline" "$T/err"
check analyze-whole 0 "$PFI" analyze "$SRC/examples/runs.csv" $M
no_out analyze-whole-quiet "no newline" "$T/err"
head -c -1 "$SRC/examples/jobs.csv" >"$T/jobs.csv"
check allocate-cut 0 "$PFI" allocate --reduction 30% "$T/jobs.csv"
grep_out allocate-cut-note "note: .*jobs.csv:10: the last line has no newline" "$T/err"
check allocate-cut-stdin 0 sh -c "\"$PFI\" allocate --reduction 30% - <\"$T/jobs.csv\""
grep_out allocate-cut-stdin-note "note: (stdin):10: the last line has no newline" "$T/err"

exit $fail
