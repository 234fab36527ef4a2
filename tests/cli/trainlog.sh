#!/bin/sh
# pfi ingest with training logs in each framework's layout: throughput = work / time, the
# exclusion counts, the no-throughput flag, the notes, the refusal message.
# Usage: trainlog.sh PFI_BINARY SOURCE_DIR            (ctest cli_trainlog)
set -u
PFI=$1
L=$2/tests/data/trainlog
S=$2/tests/data/ergonomics/smi.csv
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-trainlog.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
check() { # NAME WANT_RC LOG [ARGS...]
    name=$1 want=$2 log=$3; shift 3
    "$PFI" ingest --dry-run --telemetry "$S" --throughput-log "$log" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    [ "$rc" -eq "$want" ] || { echo "FAIL $name: exit $rc, want $want"; cat "$T/err"; fail=1; }
}
has() { grep -q -- "$2" "$3" || { echo "FAIL $1: '$2' not in $3"; cat "$3"; fail=1; }; }
hasnt() { ! grep -q -- "$2" "$3" || { echo "FAIL $1: '$2' in $3"; fail=1; }; }

# the resumed HF run at 500 W: 64 samples/s as without the resume (HF printed 128)
check hf-resumed 0 "$L/hf_500w_resumed.log"
has hf-resumed-rate "hf log, 23 intervals, 21 used.*work/time 64 samples/s" "$T/out"
has hf-resumed-notes "1 restart, 0 gap intervals excluded; 1 duplicate records, 2 sessions" "$T/out"
check hf 0 "$L/hf_500w.log"
has hf-rate "work/time 64 samples/s" "$T/out"
# no finite value: flagged, never a number
check nan 0 "$L/megatron_nan.log"
has nan-flag "flags:.* no-throughput" "$T/out"
has nan-unavailable "work/time unavailable" "$T/out"
hasnt nan-word "[^-]nan samples" "$T/out"
# a 2-day stall and a cut-off last line
check gap 0 "$L/titan_wps_gap.log"
has gap-count "1 gap intervals excluded" "$T/out"
has gap-note "line 11 has no line end" "$T/out"
# ranks
check ranks 0 "$L/titan_8rank.log"
has ranks-rate "10 intervals, 8 used.*work/time 8000 tokens/s" "$T/out"
has ranks-dups "70 duplicate records" "$T/out"
# the new readers, detected
check ds 0 "$L/deepspeed_new.log"
has ds-reader "deepspeed log, 6 intervals, 3 used" "$T/out"
check pl 0 "$L/lightning1.log"
has pl-reader "lightning log, 12 intervals, 10 used.*work/time 5 batches/s" "$T/out"
# a log no reader takes: each reader and why it refused
printf 'epoch 1 done\n' >"$T/x.log"
check refused 1 "$T/x.log"
has refused-msg "tried megatron: no .*deepspeed: no 'SamplesPerSec=' timer lines.*tqdm: no tqdm bars" "$T/err"
# the old regex form, with a note
check regex-old 0 "$L/torchtitan.log" --throughput-regex 'tps: ([0-9,]+)'
has regex-old-note "old POSIX ERE form" "$T/out"
[ $fail -eq 0 ] && echo "trainlog: all checks passed"
exit $fail
