#!/bin/sh
# End-to-end tests of pfi probe / sweep / restore on the fake libnvidia-ml.so.1: injected
# NVML failures, SIGTERM mid-sweep, kill -9 then pfi restore, a GPU lost mid-sweep, caps
# below the minimum. After every test each fake GPU must hold its original limit.
# Usage: gpu.sh PFI_BINARY FAKE_NVML_LIBRARY [PFID_BINARY]
set -u
PFI=$1
export PFI_NVML_LIBRARY=$2
T=$(mktemp -d /tmp/pfi-cli-gpu.XXXXXX)
export FAKE_NVML_STATE=$T/state
export PFI_RUN_DIR=$T/run # the GPUs' ownership locks: this test's own
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

# state: two 200-700 W GPUs at 700 W; extra keys for GPU 1 in $1
state() {
    printf 'gpu 0 uuid=GPU-0 limit=700000 enforced=700000 draw=650000\n' >"$FAKE_NVML_STATE"
    printf 'gpu 1 uuid=GPU-1 limit=700000 enforced=700000 draw=640000 %s\n' "${1:-}" >>"$FAKE_NVML_STATE"
}
# originals: every GPU back at limit=700000, no journal left
originals() { # originals NAME DIR
    n=$(grep -c 'limit=700000 ' "$FAKE_NVML_STATE")
    if [ "$n" -ne 2 ]; then bad "$1: limits not restored"; cat "$FAKE_NVML_STATE"; return; fi
    if [ -e "$2/cap-journal" ]; then bad "$1: journal left behind"; return; fi
    ok "$1: original limits"
}
expect() { # expect NAME WANT GOT
    if [ "$3" -eq "$2" ]; then ok "$1 (exit $3)"; else bad "$1: exit $3, want $2"; cat "$T/err"; fi
}
# the job: reports 1000 tokens/s ten times a second
JOB="sh -c 'while :; do echo \"step | tokens_per_sec: 1.0K\"; sleep 0.1; done'"
sweep() { # sweep DIR CAPS [extra options...]
    d=$1; c=$2; shift 2
    eval "${EXEC:-} \"$PFI\" sweep --backend nvml --caps $c -o $d --duration 1s --interval 100ms \
        --warmup 200ms --throughput-regex 'tokens_per_sec: ([0-9.]+K?)' $* -- $JOB"
}

state
"$PFI" probe --backend nvml >"$T/out" 2>"$T/err"; expect probe 0 $?
grep -q 'GPU-1' "$T/out" && grep -q 'min 200.00, max 700.00' "$T/out" && ok "probe lists limits" || bad "probe output"

state 'ext=500000'
"$PFI" probe --backend nvml --format json >"$T/out" 2>"$T/err"; expect probe-json 0 $?
grep -q 'enforced limit 500.00 W differs from the requested 700.00 W' "$T/err" && ok "probe warns enforced != requested" || bad "probe warning"

# a normal sweep on the real clock
state
sweep "$T/s1" 700,500 --stats >"$T/out" 2>"$T/err"; expect sweep 0 $?
[ "$(grep -c '^sweep,' "$T/s1/runs.csv")" -eq 2 ] && ok "two runs written" || bad "runs.csv"; 
grep -q 'sampling:' "$T/err" && sed -n 's/^pfi: sampling: /     sampling (real clock, fake NVML): /p' "$T/err"
originals sweep "$T/s1"
"$PFI" analyze "$T/s1" >"$T/out" 2>"$T/err"; expect "analyze reads the sweep directory" 0 $?

# resume: the same sweep again measures nothing new
sweep "$T/s1" 700,500 >"$T/out" 2>"$T/err"; expect resume 0 $?
grep -q '0 run(s) measured, 2 already' "$T/err" && ok "resume skips done runs" || bad "resume"

# no permission: clear error, nothing changed
state 'set_error=4'
sed -i 's/^gpu 0 .*/& set_error=4/' "$FAKE_NVML_STATE"
sweep "$T/s2" 500,700 >"$T/out" 2>"$T/err"; expect no-permission 5 $?
grep -q 'NVML_ERROR_NO_PERMISSION' "$T/err" && ok "no-permission message names NVML's error" || bad "no-permission message"
originals no-permission "$T/s2"

# cap below min: refused, nothing run; --clamp sets the minimum and flags the run
state
sweep "$T/s3" 700,150 >"$T/out" 2>"$T/err"; expect below-min 2 $?
grep -q -- "--caps: 150 W is below GPU 0's minimum power limit of 200 W" "$T/err" && grep -q -- '--clamp' "$T/err" && ok "below-min message" || bad "below-min message"
[ ! -s "$T/s3/runs.csv" ] && ok "below-min: no run" || bad "below-min ran"
sweep "$T/s3" 700,150 --clamp >"$T/out" 2>"$T/err"; expect clamp 0 $?
grep -q ',clamped,150.000,' "$T/s3/runs.csv" && ok "clamped run flagged" || bad "clamp flag"
originals clamp "$T/s3"

# set accepted but the enforced limit stays: reported, runs labelled with the enforced limit
state 'stuck=1'
sweep "$T/s4" 700,500 >"$T/out" 2>"$T/err"; expect not-effective 5 $?
grep -q 'cap not effective: enforced 700 W > requested 500 W' "$T/err" && ok "not-effective message" || bad "not-effective message"
grep -q '^sweep,700.000,.*cap_not_effective,500.000' "$T/s4/runs.csv" && ok "run labelled with the enforced limit" || bad "enforced label"
originals not-effective "$T/s4"

# capped_500 — a bounded poll (10 s) until the fake NVML holds the sweep's first cap (500 W)
capped_500() {
    n=0
    until grep -q 'limit=500000' "$FAKE_NVML_STATE"; do
        n=$((n + 1)); [ $n -gt 200 ] && return 1; sleep 0.05
    done
}

# SIGTERM mid-sweep: limits restored, exit 128+15
state
(EXEC=exec sweep "$T/s5" 500,400,700 --duration 20s >"$T/out" 2>"$T/err") &
pid=$!
capped_500 # a bounded poll until the first cap is applied
grep -q 'limit=500000' "$FAKE_NVML_STATE" && ok "sigterm: cap was applied" || bad "sigterm: cap not applied"
kill -TERM $pid; wait $pid; expect sigterm 143 $?
originals sigterm "$T/s5"

# kill -9 mid-sweep: journal left, pfi restore puts everything back
state
(EXEC=exec sweep "$T/s6" 500,700 --duration 20s >"$T/out" 2>"$T/err") &
pid=$!
capped_500
kill -KILL $pid; wait $pid 2>/dev/null
[ -e "$T/s6/cap-journal" ] && grep -q 'limit=500000' "$FAKE_NVML_STATE" && ok "kill -9 leaves journal and cap" || bad "kill -9 state"
"$PFI" restore "$T/s6" >"$T/out" 2>"$T/err"; expect restore 0 $?
originals "kill -9 + restore" "$T/s6"
"$PFI" restore "$T/s6" >"$T/out" 2>"$T/err"; expect "restore without journal: nothing to do" 0 $?
grep -q 'nothing to restore' "$T/out" && ok "restore without journal: says so" || bad "restore without journal: $(cat "$T/out" "$T/err")"
"$PFI" restore --journal "$T/s6" >"$T/out" 2>"$T/err"; expect "restore --journal DIRECTORY" 1 $?
grep -q 'is a directory' "$T/err" && ok "restore --journal DIRECTORY: says so" || bad "restore --journal DIRECTORY: $(cat "$T/err")"
# a sweep refuses to start over an unrestored journal
state
printf 'pfi-cap-journal 1\nbackend nvml\nlibrary -\npid 1\ngpu 0 GPU-0 700000\nend\n' >"$T/j"
sweep "$T/s7" 700,500 --journal "$T/j" >"$T/out" 2>"$T/err"; expect "leftover journal" 5 $?
grep -q 'pfi restore' "$T/err" && ok "leftover journal: tells to restore" || bad "leftover message"

# a GPU lost mid-sweep: run flagged, the other GPU restored; pfi restore finishes the job
state 'lost_after=60'
sweep "$T/s8" 500,400,700 >"$T/out" 2>"$T/err"; expect gpu-lost 5 $?
grep -q 'NVML_ERROR_GPU_IS_LOST' "$T/err" && ok "gpu-lost message" || bad "gpu-lost message"
grep -q 'gpu_lost' "$T/s8/runs.csv" && ok "gpu-lost run flagged" || bad "gpu-lost flag"
grep -q '^gpu 0 .*limit=700000 ' "$FAKE_NVML_STATE" && ok "gpu-lost: other GPU restored" || bad "gpu-lost: GPU 0 not restored"
"$PFI" restore "$T/s8" >"$T/out" 2>"$T/err"; expect "restore after gpu-lost" 0 $?
originals gpu-lost "$T/s8"

# no library at all: clear message, exit 5
PFI_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$PFI" probe >"$T/out" 2>"$T/err"; expect no-driver 5 $?
# --emulate alone means the emulated backend, as in pfi sweep (it loaded NVML: exit 5)
PFI_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$PFI" probe --emulate alpha=0.6 >"$T/out" 2>"$T/err"
expect probe-emulate 0 $?
grep -q 'backend emulated: 8 GPU(s)' "$T/out" && grep -q 'alpha 0.60' "$T/out" \
    && ok "probe --emulate: the emulated GPUs" || bad "probe --emulate: $(cat "$T/out" "$T/err")"
"$PFI" probe --backend nvml --emulate alpha=0.6 >"$T/out" 2>"$T/err"; expect probe-emulate-nvml 2 $?
grep -q "^pfi: probe: --emulate needs --backend emulated" "$T/err" \
    && ok "probe --backend nvml --emulate: refused" || bad "probe --backend nvml --emulate: $(cat "$T/err")"
# two sweeps on the same GPUs (issue 16): the second refuses before any change, naming the
# owner; the first restores the true originals
state
sweep "$T/own1" 500 --duration 3s >"$T/out1" 2>"$T/err1" &
own_pid=$!
n=0
until grep -q 'limit=500000' "$FAKE_NVML_STATE"; do
    n=$((n + 1)); [ $n -gt 200 ] && break; sleep 0.05
done
grep -q '^owner pfi sweep$' "$T/own1/cap-journal" && ok "the journal records its owner" || bad "no owner line in the journal"
sweep "$T/own2" 400 >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 5 ] && grep -q "GPU GPU-0 is owned by pfi sweep pid [0-9]* since" "$T/err" &&
    ok "second sweep refused, naming the owner (exit $rc)" || { bad "second sweep: exit $rc"; cat "$T/err"; }
grep -q 'limit=400000' "$FAKE_NVML_STATE" && bad "the second sweep changed a GPU" || ok "the second sweep changed nothing"
wait $own_pid
originals "first sweep after the refused one" "$T/own1"
[ ! -e "$T/own2/cap-journal" ] && ok "no journal of the refused sweep" || bad "refused sweep left a journal"
grep -q "pfi sweep pid" "$T/run/gpu-GPU-0.lock" && bad "lock text left after a clean release" || ok "a clean release empties the lock"

# pfid owns the GPUs: a sweep and pfi restore refuse, naming it; once pfid stops they can
if [ -n "${3:-}" ]; then
    state
    printf 'tok\n' > "$T/token" && chmod 600 "$T/token"
    "$3" -b nvml -s nvml_library="$PFI_NVML_LIBRARY" -l 127.0.0.1:0 -s port_file="$T/port" \
        -t "$T/token" -j "$T/pfid-journal" -i 100ms 2>"$T/pfid.log" &
    pfid_pid=$!
    n=0
    until [ -s "$T/port" ] || [ $n -gt 200 ]; do n=$((n + 1)); sleep 0.05; done
    sweep "$T/own3" 500 >"$T/out" 2>"$T/err"; rc=$?
    [ $rc -eq 5 ] && grep -q "is owned by pfid pid $pfid_pid" "$T/err" &&
        ok "sweep refused while pfid owns the GPUs (exit $rc)" || { bad "sweep beside pfid: exit $rc"; cat "$T/err"; }
    printf 'pfi-cap-journal 1\nbackend nvml\nlibrary %s\npid 1\ngpu 0 GPU-0 700000\nend\n' \
        "$PFI_NVML_LIBRARY" > "$T/j-other"
    "$PFI" restore --journal "$T/j-other" >"$T/out" 2>"$T/err"; rc=$?
    [ $rc -eq 5 ] && grep -q "is owned by pfid pid $pfid_pid" "$T/err" &&
        ok "pfi restore refused while pfid owns the GPUs (exit $rc)" || { bad "restore beside pfid: exit $rc"; cat "$T/err"; }
    kill $pfid_pid; wait $pfid_pid
    "$PFI" restore --journal "$T/j-other" >"$T/out" 2>"$T/err"; rc=$?
    expect "pfi restore once pfid stopped" 0 $rc
    originals "pfid, sweep and restore" "$T/own3"
fi

for v in sweep restore probe; do "$PFI" $v --help >/dev/null 2>&1 || bad "$v --help"; done
ok "--help"

rm -rf "$T"
exit $fail
