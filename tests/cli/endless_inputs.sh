#!/bin/sh
# Every input of every command read under the same two rules (src/cli/input.c): a pipe, a
# FIFO or /dev/stdin is read at most PFI_MAX_INPUT_BYTES (here 1M), naming the file and the
# limit, and one whose first line holds a NUL byte (/dev/zero) is refused at once. Each
# input is endless and looks valid line after line (a header, then good rows or comments
# forever), so only the limit stops it; `timeout ${TMO:-60}` keeps a regression (read forever, or to
# a limit of its own of GiBs) from hanging the test: it exits 124, not 1 ($TMO: another bound).
# usage: endless_inputs.sh PFI SOURCE_DIR
set -u
PFI=$1
SRC=$2
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
. "$SRC/tests/cli/check.sh"
export PFI_MAX_INPUT_BYTES=1M TMPDIR="$T"
umask 077
(cd "$T" && "$PFI" library generate lib > /dev/null && "$PFI" fit lib -m model.json > /dev/null 2>&1) ||
    { echo "FAIL setup: pfi library generate / fit"; exit 1; }
echo "http://127.0.0.1:9 tok-0123456789abcdef0123456789abcdef" > "$T/agents"
printf 'client_id=a\nclient_secret=b\n' > "$T/cred"
SMI_HEAD='timestamp, index, power.draw [W]'
SMI_ROW='2025/01/01 00:00:00.000, 0, 300.00'
JOBS_HEAD=$(head -1 "$SRC/examples/jobs.csv")

# endless NAME WHAT 'PRODUCER' 'COMMAND' — COMMAND reads PRODUCER's endless output (its
# stdin): exit 1 (bad input; $WANT: pfi control --check's 2, "not valid"), the message names
# WHAT and the limit
endless() {
    check "$1" "${WANT:-1}" sh -c "$3 | timeout ${TMO:-60} $4"
    grep_out "$1-says" "$2: more than 1048576 bytes (the limit on a pipe's input): raise it with PFI_MAX_INPUT_BYTES" "$T/err"
}
M=$T/model.json
endless predict-telemetry "-" "(echo '$SMI_HEAD'; yes '$SMI_ROW')" "'$PFI' predict -m '$M' --telemetry -"
endless predict-telemetry-fifo "/dev/stdin" "(echo '$SMI_HEAD'; yes '$SMI_ROW')" "'$PFI' predict -m '$M' --telemetry /dev/stdin"
endless predict-model "-" "yes ' '" "'$PFI' predict -m - x=1"
endless predict-groups "/dev/stdin" "(echo group,pfi,x; yes a,1.2,3)" "'$PFI' predict -m '$M' --groups /dev/stdin"
endless fit-groups "/dev/stdin" "(echo group,pfi,x; yes a,1.2,3)" "'$PFI' fit /dev/stdin"
endless ingest-telemetry "-" "(echo '$SMI_HEAD'; yes '$SMI_ROW')" "'$PFI' ingest --dry-run --telemetry -"
endless ingest-warmup "-" "(echo '$SMI_HEAD'; yes '$SMI_ROW')" "'$PFI' ingest --dry-run --warmup 5 --telemetry -"
endless ingest-throughput-log "--throughput-log -" "yes 'iteration 1 | throughput 5 tokens/s'" \
    "'$PFI' ingest --dry-run -q --telemetry '$SRC/examples/smi.csv' --throughput-log -"
endless ingest-kernel-log "--kernel-log -" "yes 'kernel: x'" \
    "'$PFI' ingest --dry-run -q --telemetry '$SRC/examples/smi.csv' --kernel-log -"
endless allocate "-" "(echo '$JOBS_HEAD'; yes 'a,dense,8,300,2400,100,')" "'$PFI' allocate -"
endless allocate-fifo "/dev/stdin" "(echo '$JOBS_HEAD'; yes 'a,dense,8,300,2400,100,')" "'$PFI' allocate /dev/stdin"
endless allocate-topology "--topology -" "yes '# a comment'" \
    "'$PFI' allocate --topology - '$SRC/examples/jobs.csv'"
endless analyze "-" "(echo g,c,p,t; yes a,300,1000,100)" \
    "'$PFI' analyze --group g --cap c --power p --throughput t -"
endless analyze-fifo "/dev/stdin" "(echo g,c,p,t; yes a,300,1000,100)" \
    "'$PFI' analyze --group g --cap c --power p --throughput t /dev/stdin"
check analyze-manifest-pipe 1 sh -c "yes ' ' | timeout ${TMO:-60} '$PFI' analyze --manifest /dev/stdin '$SRC/examples/runs.csv'"
grep_out analyze-manifest-pipe-says "/dev/stdin: not a regular file: a manifest (pfi-dataset.json) is read from a file" "$T/err"
endless simulate-model "/dev/stdin" "yes ' '" "'$PFI' simulate --model /dev/stdin --workloads 1"
endless schedule "schedule: -" "yes '# a comment'" "'$PFI' schedule -"
WANT=2 endless control-schedule "schedule /dev/stdin" "yes '# a comment'" \
    "'$PFI' control --agents '$T/agents' --schedule /dev/stdin --check"
WANT=2 endless control-tiers "tiers /dev/stdin" "yes '# a comment'" \
    "'$PFI' control --agents '$T/agents' --budget-w 1000 --tiers /dev/stdin --check"
WANT=2 endless control-topology "topology /dev/stdin" "yes '# a comment'" \
    "'$PFI' control --agents '$T/agents' --topology /dev/stdin --check"
WANT=2 endless control-policy "policy -" "yes '# a comment'" \
    "'$PFI' control --agents '$T/agents' --budget-w 1000 --policy - --check"
endless report-tiers "tiers /dev/stdin" "yes '# a comment'" \
    "'$PFI' report --settlement --tiers /dev/stdin '$T/none.db'"
endless openadr-levels "--levels /dev/stdin" "yes '# a comment'" \
    "'$PFI' openadr poll --vtn http://127.0.0.1:9 --program p --credentials '$T/cred' --epoch 1700000000 --schedule-out '$T/s.json' --levels /dev/stdin --once"

# binary through a pipe: refused from the first block, naming the input
binary() { # binary NAME WHAT 'COMMAND'
    check "$1" "${WANT:-1}" sh -c "cat /dev/zero | timeout ${TMO:-60} $3"
    grep_out "$1-says" "$2: not text (a NUL byte at offset 0)" "$T/err"
}
binary zero-predict-telemetry "-" "'$PFI' predict -m '$M' --telemetry -"
binary zero-predict-model "-" "'$PFI' predict -m - x=1"
binary zero-allocate-topology "--topology -" "'$PFI' allocate --topology - '$SRC/examples/jobs.csv'"
binary zero-analyze "-" "'$PFI' analyze --group g --cap c --power p --throughput t -"
binary zero-schedule "schedule: -" "'$PFI' schedule -"
WANT=2 binary zero-control-tiers "tiers /dev/stdin" "'$PFI' control --agents '$T/agents' --budget-w 1000 --tiers /dev/stdin --check"

# under the limit a pipe is read as the file is
check allocate-pipe-ok 0 sh -c "'$PFI' allocate --budget-w 20000 - < '$SRC/examples/jobs.csv'"
check schedule-pipe-ok 0 sh -c "echo '0 600 30%' | '$PFI' schedule -"
exit $fail
