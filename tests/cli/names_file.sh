#!/bin/sh
# Every reader's error names the file (review: pfi report --settlement /dev/null said "audit
# log: reading periods: no such table: ctl_periods", no file; a directory "disk I/O error"):
# each command given /dev/null, an empty file, a directory and a missing file fails (exit
# 1, or 2 where the command line must change) and its message on stderr names the path, with
# no "nan" or "disk I/O error".
# usage: names_file.sh PFI
set -u
PFI=$1
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
(cd "$T" && "$PFI" library generate lib > /dev/null && "$PFI" fit lib -m model.json > /dev/null 2>&1) ||
    { echo "FAIL setup: pfi library generate / fit"; exit 1; }
: > "$T/empty.csv"
mkdir "$T/adir"
M=$T/model.json
MAP="--group g --cap c --power p --throughput t"

# names NAME INPUT COMMAND... — COMMAND (INPUT in it) fails, naming INPUT on stderr
names() {
    name=$1 input=$2
    shift 2
    "$@" > "$T/out" 2> "$T/err"
    rc=$?
    if [ $rc -ne 1 ] && [ $rc -ne 2 ]; then
        echo "FAIL $name: exit $rc, want 1 or 2"; cat "$T/err"; fail=1
    elif ! grep -qF -- "$input" "$T/err"; then
        echo "FAIL $name: the message does not name $input: $(cat "$T/err")"; fail=1
    elif grep -qi 'disk I/O error\|\bnan\b' "$T/err"; then
        echo "FAIL $name: $(cat "$T/err")"; fail=1
    else
        echo "ok   $name: $(head -1 "$T/err")"
    fi
}
for f in /dev/null "$T/empty.csv" "$T/adir" "$T/missing.db"; do
    k=$(basename "$f")
    names "report-$k" "$f" "$PFI" report --json "$f"
    names "report-figure-$k" "$f" "$PFI" report -o "$T/x.png" "$f"
    names "report-settlement-$k" "$f" "$PFI" report --settlement "$f"
    names "report-settlement-json-$k" "$f" "$PFI" report --settlement --json "$f"
    names "control-status-$k" "$f" "$PFI" control status --db "$f"
    names "analyze-$k" "$f" "$PFI" analyze "$f"
    # shellcheck disable=SC2086
    names "analyze-mapped-$k" "$f" "$PFI" analyze $MAP "$f"
    names "analyze-db-$k" "$f" "$PFI" analyze --db "$f"
    names "analyze-manifest-$k" "$f" "$PFI" analyze --manifest "$f" "$T/empty.csv"
    names "predict-telemetry-$k" "$f" "$PFI" predict -m "$M" --telemetry "$f"
    names "predict-model-$k" "$f" "$PFI" predict -m "$f" x=1
    names "predict-groups-$k" "$f" "$PFI" predict -m "$M" --groups "$f"
    names "predict-db-$k" "$f" "$PFI" predict -m "$M" --db "$f"
    names "allocate-$k" "$f" "$PFI" allocate "$f"
    names "schedule-$k" "$f" "$PFI" schedule "$f"
    names "simulate-model-$k" "$f" "$PFI" simulate --model "$f"
    names "fit-$k" "$f" "$PFI" fit "$f"
    names "stats-$k" "$f" "$PFI" stats "$f"
    names "ingest-$k" "$f" "$PFI" ingest --dry-run --telemetry "$f"
done
exit $fail
