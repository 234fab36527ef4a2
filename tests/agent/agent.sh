#!/bin/sh
# End-to-end tests of pfid on the emulated backend and on the fake libnvidia-ml.so.1:
# authentication, malformed and oversized requests, unknown GPUs and jobs, caps out of range,
# all-or-nothing, idempotent request ids, lease expiry under both policies, SIGTERM,
# kill -9 then restart, a GPU lost while capped, a stalled driver (/healthz 503), Slurm and
# static job mapping, throughput from a log and from POST, SIGHUP reload, metrics format
# (promtool check metrics and tests/agent/check_metrics.py). Every scenario ends with every
# GPU on its original limit and no journal left.
# Usage: agent.sh PFID FAKE_NVML_LIBRARY SOURCE_DIR
set -u
PFID=$1
FAKE=$2
SRC=$3
T=$(mktemp -d /tmp/pfid-test.XXXXXX)
PIDS=""
AGENT_LOGS=""
cleanup() {
    for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT INT TERM
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$TOKEN" >"$T/token"
chmod 600 "$T/token"
export FAKE_NVML_STATE="$T/state"
export FAKE_NVML_CTL="$T/ctl"
export FAKE_NVML_TRACE="$T/trace"
export PFI_RUN_DIR="$T/run" # the GPUs' ownership locks: this test's own

# the fake node: two 200-700 W GPUs at 700 W; extra keys for GPU 0 and GPU 1
state() {
    printf 'gpu 0 uuid=GPU-0 limit=700000 enforced=700000 draw=650000 %s\n' "${1:-}" >"$FAKE_NVML_STATE"
    printf 'gpu 1 uuid=GPU-1 limit=700000 enforced=700000 draw=640000 %s\n' "${2:-}" >>"$FAKE_NVML_STATE"
}

# start_agent NAME ARGS...: pfid on a free port (sets PID, PORT); its log is $T/NAME.log
start_agent() {
    name=$1
    shift
    rm -f "$T/port"
    "$PFID" -l 127.0.0.1:0 -s port_file="$T/port" -t "$T/token" -j "$T/journal" -i 100ms \
        -s stale_after=1s "$@" 2>>"$T/$name.log" &
    PID=$!
    AGENT_LOGS="$AGENT_LOGS $T/$name.log"
    PIDS="$PIDS $PID"
    i=0
    while [ ! -s "$T/port" ] && [ $i -lt 200 ] && kill -0 "$PID" 2>/dev/null; do
        sleep 0.05
        i=$((i + 1))
    done
    PORT=$(cat "$T/port" 2>/dev/null || true)
    if [ -z "$PORT" ]; then
        bad "$name: pfid did not start"
        cat "$T/$name.log"
        return 1
    fi
}

# stop_agent NAME WANT_EXIT [SIGNAL]
stop_agent() {
    kill "-${3:-TERM}" "$PID"
    wait "$PID"
    rc=$?
    if [ "$rc" -eq "$2" ]; then ok "$1: exit $rc"; else bad "$1: exit $rc, want $2"; tail -20 "$T/$1.log"; fi
}

# api METHOD PATH [BODY] [TOKEN ("-" for none)]: sets CODE, body in $T/body
api() {
    m=$1
    p=$2
    body=${3:-}
    tok=${4:-$TOKEN}
    set -- -s -o "$T/body" -w '%{http_code}' -X "$m" --max-time 10
    [ "$tok" != "-" ] && set -- "$@" -H "Authorization: Bearer $tok"
    [ -n "$body" ] && set -- "$@" -H 'Content-Type: application/json' --data-binary "$body"
    CODE=$(curl "$@" "http://127.0.0.1:$PORT$p")
}
# jget EXPR: a Python expression over d, the JSON in $T/body
jget() { python3 -c "import json,sys; d=json.load(open('$T/body')); print(eval(sys.argv[1]))" "$1"; }
# expect NAME WANT_CODE [GREP_IN_BODY]
expect() {
    if [ "$CODE" = "$2" ] && { [ -z "${3:-}" ] || grep -q -- "$3" "$T/body"; }; then
        ok "$1 ($CODE)"
    else
        bad "$1: got $CODE, want $2 ${3:-}"
        cat "$T/body"
        echo
    fi
}
caps() { api GET /v1/state "" -; jget "[g['cap_w'] for g in d['gpus']]"; }
# originals NAME: the running agent shows every GPU on its original limit; no journal
originals() {
    got=$(caps)
    if [ "$got" != "[700.0, 700.0]" ]; then bad "$1: caps $got, want originals"; return; fi
    if [ -e "$T/journal" ]; then bad "$1: journal left"; return; fi
    if [ "$BACKEND" = nvml ] && [ "$(grep -c 'limit=700000 ' "$FAKE_NVML_STATE")" -ne 2 ]; then
        bad "$1: fake GPUs not at 700 W"; cat "$FAKE_NVML_STATE"; return
    fi
    ok "$1: original limits"
}
# poll TRIES CMD...: a bounded poll (TRIES x 0.05 s) until CMD succeeds; the assertion after
# it checks the same condition again (so a poll that runs out fails there, named)
poll() {
    n=$1
    shift
    k=0
    while ! "$@" && [ $k -lt "$n" ]; do
        sleep 0.05
        k=$((k + 1))
    done
}
# state_is EXPR: GET /v1/state and the Python expression EXPR over it prints True
state_is() { api GET /v1/state "" - && [ "$(jget "$1" 2>/dev/null)" = True ]; }
# healthz_is CODE: GET /healthz answers CODE
healthz_is() { api GET /healthz "" - && [ "$CODE" = "$1" ]; }
# metrics_have REGEX: GET /metrics has a line matching REGEX
metrics_have() { curl -s "http://127.0.0.1:$PORT/metrics" | grep -q "$1"; }
# until_originals TRIES: a bounded poll (TRIES x 0.05 s) until every GPU shows its original
# limit and the journal is gone (the assertion is then originals' own)
until_originals() {
    k=0
    while { [ "$(caps)" != "[700.0, 700.0]" ] || [ -e "$T/journal" ]; } && [ $k -lt "$1" ]; do
        sleep 0.05
        k=$((k + 1))
    done
}
# originals_stopped NAME: after pfid exited (fake NVML: the state file; both: no journal)
originals_stopped() {
    if [ -e "$T/journal" ]; then bad "$1: journal left"; return; fi
    if [ "$BACKEND" = nvml ] && [ "$(grep -c 'limit=700000 ' "$FAKE_NVML_STATE")" -ne 2 ]; then
        bad "$1: fake GPUs not at 700 W"; cat "$FAKE_NVML_STATE"; return
    fi
    ok "$1: original limits after exit"
}
put() { # put ID LEASE CAPS_JSON [TOKEN]
    api PUT /v1/caps "{\"request_id\": \"$1\", \"lease_s\": $2, \"caps\": $3}" "${4:-$TOKEN}"
}
check_metrics() { # check_metrics NAME
    curl -s -o "$T/metrics" -D "$T/headers" "http://127.0.0.1:$PORT/metrics"
    grep -qi '^content-type: text/plain; version=0.0.4' "$T/headers" || bad "$1: metrics content type"
    if command -v promtool >/dev/null 2>&1; then
        if promtool check metrics <"$T/metrics" >"$T/promtool" 2>&1; then ok "$1: promtool check metrics"
        else bad "$1: promtool"; cat "$T/promtool"; fi
    fi
    if python3 "$SRC/tests/agent/check_metrics.py" "$T/metrics"; then ok "$1: no duplicate series or split family"
    else bad "$1: metrics structure"; fi
}

suite() {
    BACKEND=$1
    rm -f "$T/journal" "$T/ctl"
    if [ "$BACKEND" = emulated ]; then
        ARGS="-b emulated --emulate gpus=2,startup=0,noise=0,report=1,tau=0.05 -s jobs=emulated -s emulated_job=job-a"
        U0=EMU-00000001-0000
        U1=EMU-00000001-0001
    else
        state
        printf '# uuid job class\nGPU-0 job-a moe-ft\nGPU-1 job-b\n' >"$T/map"
        ARGS="-b nvml -s nvml_library=$FAKE -s jobs=static -s jobs_file=$T/map"
        U0=GPU-0
        U1=GPU-1
    fi
    N=$BACKEND
    # shellcheck disable=SC2086
    start_agent "$N" $ARGS -s lease_max=1h || return
    api GET /healthz "" -; expect "$N: healthz" 200 ok
    api GET /v1/state "" -; expect "$N: state" 200 '"hostname"'
    [ "$(jget "d['gpus'][0]['min_cap_w'], d['gpus'][0]['original_cap_w'], d['lease']['policy']")" = "(200.0, 700.0, 'hold')" ] \
        && ok "$N: state limits and lease policy" || bad "$N: state limits"

    # --- authentication: nothing changes without the token
    put r0 60 "[{\"uuid\": \"$U0\", \"cap_w\": 400}]" -; expect "$N: PUT without token" 401 'bearer token'
    put r0 60 "[{\"uuid\": \"$U0\", \"cap_w\": 400}]" "x$TOKEN"; expect "$N: PUT with a wrong token" 401
    put r0 60 "[{\"uuid\": \"$U0\", \"cap_w\": 400}]" "$(printf '%s' "$TOKEN" | cut -c1-63)"; expect "$N: PUT with a token prefix" 401
    api DELETE /v1/caps "" -; expect "$N: DELETE without token" 401
    api POST /v1/jobs/job-a/throughput '{"throughput_tok_s": 1}' -; expect "$N: POST throughput without token" 401
    originals "$N: after 401s"

    # --- bad requests: clear 4xx, nothing changed
    api PUT /v1/caps '{"request_id": "r1", "lease_s": 60, "caps": [{"uuid": "'$U0'", "cap_w": 400}'
    expect "$N: malformed JSON" 400 'malformed JSON'
    api PUT /v1/caps '{"request_id": "r1", "lease_s": 60, "lease_s": 5, "caps": [{"uuid": "'$U0'", "cap_w": 400}]}'
    expect "$N: duplicate key" 400 'duplicate'
    put r1 60 "[{\"uuid\": \"$U0\", \"cap_w\": \"400\"}]"; expect "$N: cap_w a string" 400 'cap_w must be a number'
    put r1 '"60"' "[{\"uuid\": \"$U0\", \"cap_w\": 400}]"; expect "$N: lease_s a string" 400 'lease_s'
    api PUT /v1/caps '{"lease_s": 60, "caps": [{"uuid": "'$U0'", "cap_w": 400}]}'; expect "$N: no request_id" 400 'request_id is required'
    api PUT /v1/caps '[1,2]'; expect "$N: not an object" 400
    head -c 200000 /dev/zero | tr '\0' ' ' >"$T/huge"
    CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
        --data-binary @"$T/huge" "http://127.0.0.1:$PORT/v1/caps")
    expect "$N: huge body (Content-Length)" 413 'request body over'
    CODE=$(curl -s -o "$T/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
        -H 'Transfer-Encoding: chunked' --data-binary @"$T/huge" "http://127.0.0.1:$PORT/v1/caps")
    expect "$N: huge body (chunked)" 413 'request body over'
    put r1 60 '[{"uuid": "GPU-nope", "cap_w": 400}]'; expect "$N: unknown GPU" 404 'no GPU GPU-nope'
    put r1 60 '[{"job": "job-zzz", "cap_w": 400}]'; expect "$N: unknown job" 404 'no GPU of job job-zzz'
    put r1 60 "[{\"uuid\": \"$U0\", \"cap_w\": 150}]"; expect "$N: cap below min" 422 "range \[200.00, 700.00\] W"
    put r1 60 "[{\"uuid\": \"$U0\", \"cap_w\": 900}]"; expect "$N: cap above max" 422 "$U0"
    put r1 7200 "[{\"uuid\": \"$U0\", \"cap_w\": 400}]"; expect "$N: lease above lease_max" 422 'lease_max'
    put r1 60 "[{\"uuid\": \"$U0\", \"cap_w\": 400}, {\"uuid\": \"$U1\", \"cap_w\": 100}]"
    expect "$N: all or nothing (second cap below min)" 422 "$U1"
    put r1 60 "[{\"uuid\": \"$U0\", \"cap_w\": 400}, {\"uuid\": \"$U0\", \"cap_w\": 500}]"; expect "$N: GPU named twice" 400 'named twice'
    api GET /nope "" -; expect "$N: unknown path" 404
    api POST /v1/caps '{}'; expect "$N: wrong method" 405
    originals "$N: after bad requests"

    # --- a valid PUT, its replay, metrics while capped, DELETE
    put r2 60 "[{\"uuid\": \"$U0\", \"cap_w\": 450}, {\"uuid\": \"$U1\", \"cap_w\": 500.5}]"
    expect "$N: PUT" 200 '"applied":true'
    [ "$(jget "[(g['uuid'], g['requested_cap_w'], g['enforced_cap_w']) for g in d['gpus']]")" = "[('$U0', 450.0, 450.0), ('$U1', 500.5, 500.5)]" ] \
        && ok "$N: PUT response" || { bad "$N: PUT response"; cat "$T/body"; }
    [ -e "$T/journal" ] && ok "$N: journal written" || bad "$N: no journal"
    [ "$(caps)" = "[450.0, 500.5]" ] && ok "$N: caps in force" || bad "$N: caps $(caps)"
    put r2 60 "[{\"uuid\": \"$U0\", \"cap_w\": 300}]"; expect "$N: same request id again" 200 '"applied":false'
    [ "$(caps)" = "[450.0, 500.5]" ] && ok "$N: duplicate id applied once" || bad "$N: duplicate id changed caps"
    put r3 60 '[{"job": "job-a", "cap_w": 420}]'; expect "$N: PUT by job" 200 '"applied":true'
    if [ "$BACKEND" = emulated ]; then want="[420.0, 420.0]"; else want="[420.0, 500.5]"; fi
    [ "$(caps)" = "$want" ] && ok "$N: job cap on the job's GPUs" || bad "$N: job caps $(caps), want $want"
    poll 100 state_is "d['lease'] is not None and d['lease']['request_id'] == 'r3'"
    api GET /v1/state "" -
    [ "$(jget "d['lease']['request_id']")" = r3 ] && ok "$N: lease shows the request" || bad "$N: lease"
    check_metrics "$N: capped"
    grep -q '^pfi_gpu_job_info{gpu="0",uuid="'$U0'",hostname="[^"]*",job="job-a"} 1$' "$T/metrics" \
        && ok "$N: job info series" || bad "$N: job info series"
    grep -q '^pfi_cap_lease_active{hostname="[^"]*"} 1$' "$T/metrics" && ok "$N: lease metric" || bad "$N: lease metric"
    api DELETE /v1/caps; expect "$N: DELETE" 200 '"requested_cap_w":700.0'
    originals "$N: after DELETE"

    # --- throughput: POST (and, on the fake node, a training log)
    api POST /v1/jobs/job-a/throughput '{"throughput_tok_s": 1234.5}'; expect "$N: POST throughput" 200
    api POST /v1/jobs/job-zzz/throughput '{"throughput_tok_s": 1}'; expect "$N: throughput of an unknown job" 404
    api POST /v1/jobs/job-a/throughput '{"throughput_tok_s": -1}'; expect "$N: negative throughput" 400
    if [ "$BACKEND" = emulated ]; then
        poll 200 state_is "d['jobs'][0]['throughput_tok_s'] is not None and (d['jobs'][0]['power_w'] or 0) > 0"
        api GET /v1/state "" -
        [ "$(jget "d['jobs'][0]['throughput_tok_s'] is not None and d['jobs'][0]['power_w'] > 0")" = True ] \
            && ok "$N: emulated job's throughput and power" || { bad "$N: emulated throughput"; cat "$T/body"; }
    else
        api GET /v1/state "" -
        [ "$(jget "[(j['id'], j['throughput_tok_s'], j['class']) for j in d['jobs']][0]")" = "('job-a', 1234.5, 'moe-ft')" ] \
            && ok "$N: posted throughput and class in state" || { bad "$N: posted throughput"; cat "$T/body"; }
    fi
    stop_agent "$N" 0
    originals_stopped "$N: stop"

    # --- lease expiry, policy restore
    # shellcheck disable=SC2086
    start_agent "$N-restore" $ARGS -s lease_policy=restore || return
    put r4 2 "[{\"uuid\": \"$U0\", \"cap_w\": 300}]"; expect "$N: PUT with a 2 s lease" 200
    [ "$(caps)" = "[300.0, 700.0]" ] && ok "$N: capped under lease" || bad "$N: lease cap"
    until_originals 200
    originals "$N: lease expired, policy restore"
    grep -q 'policy restore' "$T/$N-restore.log" && ok "$N: restore logged" || bad "$N: restore not logged"
    stop_agent "$N-restore" 0

    # --- lease expiry, policy hold for hold_max, then restore
    # shellcheck disable=SC2086
    start_agent "$N-hold" $ARGS -s lease_policy=hold -s hold_max=5s || return
    put r5 1 "[{\"uuid\": \"$U1\", \"cap_w\": 333}]"; expect "$N: PUT (hold policy)" 200
    # bounded polls, not sleeps: the lease ends after 1 s and the caps are held until 6 s
    holding() {
        curl -s "http://127.0.0.1:$PORT/metrics" | grep -q '^pfi_cap_lease_holding{hostname="[^"]*"} 1$'
    }
    k=0
    while ! holding && [ $k -lt 100 ]; do sleep 0.05; k=$((k + 1)); done
    holding && ok "$N: holding metric" || bad "$N: holding metric"
    [ "$(caps)" = "[700.0, 333.0]" ] && ok "$N: lease expired, caps held" || bad "$N: hold: caps $(caps)"
    until_originals 300
    originals "$N: hold_max over, restored"
    # SIGTERM while capped: caps restored
    put r6 60 "[{\"uuid\": \"$U0\", \"cap_w\": 250}]"; expect "$N: PUT before SIGTERM" 200
    stop_agent "$N-hold" 0
    originals_stopped "$N: SIGTERM"
    grep -q 'restored (shutdown)' "$T/$N-hold.log" && ok "$N: SIGTERM restore logged" || bad "$N: SIGTERM restore log"

    # --- kill -9 while capped, then restart: the journal is repaired
    # shellcheck disable=SC2086
    start_agent "$N-kill" $ARGS || return
    put r7 60 "[{\"uuid\": \"$U0\", \"cap_w\": 350}, {\"uuid\": \"$U1\", \"cap_w\": 360}]"; expect "$N: PUT before kill -9" 200
    kill -KILL "$PID"
    wait "$PID" 2>/dev/null
    [ -e "$T/journal" ] && ok "$N: kill -9 leaves the journal" || bad "$N: no journal after kill -9"
    if [ "$BACKEND" = nvml ]; then
        grep -q 'limit=350000' "$FAKE_NVML_STATE" && ok "$N: kill -9 leaves the cap" || bad "$N: cap gone"
    fi
    # under lease_policy = hold (the default) a restart within the lease re-applies the held
    # caps from the journal instead of lifting the node (issue 16)
    # shellcheck disable=SC2086
    start_agent "$N-resume" $ARGS || return
    grep -q 'restarted under lease_policy=hold: the held caps of lease r7 re-applied' "$T/$N-resume.log" &&
        [ "$(caps)" = "[350.0, 360.0]" ] && ok "$N: restart under hold re-applied the held caps" ||
        bad "$N: restart under hold: caps $(caps)"
    kill -KILL "$PID"
    wait "$PID" 2>/dev/null
    # lease_policy = restore: the restart repairs the journal
    # shellcheck disable=SC2086
    start_agent "$N-restart" $ARGS -s lease_policy=restore || return
    grep -q 'restored and removed' "$T/$N-restart.log" && ok "$N: restart repaired the journal" || bad "$N: no repair"
    originals "$N: after kill -9 and restart"
    stop_agent "$N-restart" 0
    originals_stopped "$N: kill -9"
}

suite emulated
suite nvml
BACKEND=nvml

# --- a GPU lost while capped (fake NVML): reported, no values, the rest restored; the
# journal survives until the GPU is back, then a restart restores it
state
# shellcheck disable=SC2086
start_agent lost $ARGS || exit 1
put r8 60 '[{"uuid": "GPU-0", "cap_w": 400}, {"uuid": "GPU-1", "cap_w": 410}]'; expect "lost: PUT" 200
echo "lost 1" >"$FAKE_NVML_CTL"
poll 200 metrics_have '^pfi_gpu_up{gpu="1",[^}]*} 0$'
check_metrics "lost: metrics with a lost GPU"
grep -q '^pfi_gpu_up{gpu="1",[^}]*} 0$' "$T/metrics" && ok "lost: pfi_gpu_up 0" || bad "lost: up"
grep -q '^pfi_gpu_power_watts{gpu="1",' "$T/metrics" && bad "lost: power sample of a lost GPU" || ok "lost: no power sample"
grep -q '^pfi_job_power_watts{job="job-b"' "$T/metrics" && bad "lost: job power of a lost GPU" || ok "lost: no job power"
api GET /v1/state "" -
[ "$(jget "d['gpus'][1]['power_w'], d['gpus'][0]['power_w'] is not None")" = "(None, True)" ] && ok "lost: state power null" || bad "lost: state"
put r9 60 '[{"uuid": "GPU-1", "cap_w": 300}]'; expect "lost: PUT on the lost GPU" 503 'GPU-1'
api DELETE /v1/caps; expect "lost: DELETE" 500 'journal'
grep -q '^gpu 0 .*limit=700000 ' "$FAKE_NVML_STATE" && ok "lost: GPU 0 restored" || bad "lost: GPU 0 not restored"
stop_agent lost 1
[ -e "$T/journal" ] && ok "lost: journal kept" || bad "lost: journal removed"
rm -f "$FAKE_NVML_CTL"
# shellcheck disable=SC2086
start_agent lost-back $ARGS || exit 1
originals "lost: GPU back, restart restored it"
stop_agent lost-back 0

# --- all or nothing on the hardware: GPU 1 refuses the set after GPU 0 was lowered; GPU 0
# is put back, the answer is 500, nothing stays changed
state "" "set_error=4"
# shellcheck disable=SC2086
start_agent rollback $ARGS || exit 1
put r12 60 '[{"uuid": "GPU-0", "cap_w": 400}, {"uuid": "GPU-1", "cap_w": 410}]'
expect "rollback: GPU 1 refuses" 500 'not applied'
grep -q 'NVML_ERROR_NO_PERMISSION' "$T/body" && ok "rollback: NVML's error named" || bad "rollback: message"
grep -q '^set 0 400000 0$' "$FAKE_NVML_TRACE" && grep -q '^set 0 700000 0$' "$FAKE_NVML_TRACE" \
    && ok "rollback: GPU 0 was lowered, then put back" || { bad "rollback trace"; cat "$FAKE_NVML_TRACE"; }
until_originals 200
originals "rollback"
stop_agent rollback 0

# --- a stalled driver: /healthz 503, /metrics still answers (never a GPU call in a scrape)
start_agent stall $ARGS || exit 1
echo hang >"$FAKE_NVML_CTL"
poll 300 healthz_is 503
api GET /healthz "" -; expect "stall: healthz" 503 'stalled'
t0=$(date +%s%N)
api GET /metrics "" -; expect "stall: metrics answer" 200
t1=$(date +%s%N)
[ $(((t1 - t0) / 1000000)) -lt 1000 ] && ok "stall: scrape took $(((t1 - t0) / 1000000)) ms" || bad "stall: scrape slow"
grep -q '^pfi_gpu_up{gpu="0",[^}]*} 0$' "$T/body" && ok "stall: stale GPU is down" || bad "stall: stale GPU"
grep -q '^pfi_gpu_power_watts' "$T/body" && bad "stall: stale power has a sample" || ok "stall: no stale sample"
put r10 60 '[{"uuid": "GPU-0", "cap_w": 400}]'
expect "stall: PUT while the driver hangs" 503 'not responding'
rm -f "$FAKE_NVML_CTL"
poll 300 healthz_is 200
api GET /healthz "" -; expect "stall: healthz recovered" 200
originals "stall"
stop_agent stall 0

# --- Slurm mapping: the GPU's process carries SLURM_JOB_ID
env SLURM_JOB_ID=4242 sleep 60 &
SPID=$!
PIDS="$PIDS $SPID"
state "pids=$SPID"
start_agent slurm -b nvml -s nvml_library="$FAKE" -s jobs=slurm -s jobs_refresh=100ms || exit 1
poll 200 state_is "[g['job'] for g in d['gpus']] == ['4242', None]"
api GET /v1/state "" -
[ "$(jget "[g['job'] for g in d['gpus']]")" = "['4242', None]" ] && ok "slurm: GPU 0 belongs to job 4242" || { bad "slurm mapping"; cat "$T/body"; }
put r11 60 '[{"job": "4242", "cap_w": 480}]'; expect "slurm: PUT by Slurm job" 200 'GPU-0'
api DELETE /v1/caps; expect "slurm: DELETE" 200
stop_agent slurm 0
kill "$SPID" 2>/dev/null
originals_stopped slurm

# --- throughput from a training log; SIGHUP reloads the mapping
state
printf '01/15/2025 10:00:00 [INFO]: iteration: 1 / 100 | consumed_tokens: 1M | elapsed_time_per_iteration_ms: 2K | tokens_per_sec: 500K\n' >"$T/train.log"
printf '01/15/2025 10:00:02 [INFO]: iteration: 2 / 100 | consumed_tokens: 2M | elapsed_time_per_iteration_ms: 2K | tokens_per_sec: 500K\n' >>"$T/train.log"
# shellcheck disable=SC2086
start_agent tlog $ARGS -s "throughput_log=job-a nanotron $T/train.log" || exit 1
poll 200 state_is "[j['throughput_tok_s'] for j in d['jobs'] if j['id'] == 'job-a'][0] is not None"
api GET /v1/state "" -
got=$(jget "[j['throughput_tok_s'] for j in d['jobs'] if j['id'] == 'job-a'][0]")
[ "$got" != None ] && ok "tlog: throughput $got tokens/s from the log" || { bad "tlog: no throughput"; cat "$T/body"; }
printf 'GPU-0 job-a\nGPU-1 job-c\n' >"$T/map"
kill -HUP "$PID"
poll 200 state_is "d['gpus'][1]['job'] == 'job-c'"
api GET /v1/state "" -
[ "$(jget "d['gpus'][1]['job']")" = job-c ] && ok "SIGHUP reloaded the mapping" || bad "SIGHUP mapping"
curl -s "http://127.0.0.1:$PORT/metrics" | grep -q '^pfi_job_throughput_tokens_per_second{job="job-a"' \
    && ok "tlog: throughput metric" || bad "tlog: throughput metric"
stop_agent tlog 0

# --- reads behind the token when auth_reads = true
start_agent authreads $ARGS -s auth_reads=true || exit 1
api GET /metrics "" -; expect "auth_reads: metrics without token" 401
api GET /metrics; expect "auth_reads: metrics with token" 200
api GET /healthz "" -; expect "auth_reads: healthz stays open" 200
stop_agent authreads 0

# --- configuration and token errors
printf 'interval = 1s\nlease_policy = sometimes\n' >"$T/bad.conf"
"$PFID" --check -c "$T/bad.conf" -t "$T/token" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q 'bad.conf:2: lease_policy' "$T/out" && ok "bad config: exit 2, file and line" || { bad "bad config ($rc)"; cat "$T/out"; }
"$PFID" --check -c "$SRC/examples/pfid.conf" -t "$T/token" -j "$T/journal" >"$T/out" 2>&1 && ok "examples/pfid.conf is valid" || { bad "example config"; cat "$T/out"; }
# the journal's directory missing: --check fails naming it (not "configuration valid")
"$PFID" --check -c "$SRC/examples/pfid.conf" -t "$T/token" -j "$T/no-such-dir/journal" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "directory $T/no-such-dir: No such file or directory" "$T/out" && ! grep -q 'configuration valid' "$T/out" &&
    ok "--check: a missing journal directory fails, named" || { bad "missing journal directory ($rc)"; cat "$T/out"; }
: >"$T/not-a-dir"
"$PFID" --check -c "$SRC/examples/pfid.conf" -t "$T/token" -j "$T/not-a-dir/journal" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "$T/not-a-dir is not a directory" "$T/out" &&
    ok "--check: a journal 'directory' that is a file fails" || { bad "journal dir is a file ($rc)"; cat "$T/out"; }
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1 &&
    getent group nogroup >/dev/null 2>&1; then
    mkdir -p "$T/ro" && chmod 755 "$T/ro" "$T"
    cp "$T/token" "$T/ro/token" && chown nobody "$T/ro/token" && chmod 600 "$T/ro/token"
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$PFID" --check -c "$SRC/examples/pfid.conf" \
        -t "$T/ro/token" -j "$T/ro/journal" >"$T/out" 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q "directory $T/ro is not writable" "$T/out" &&
        ok "--check: a journal directory pfid may not write fails" || { bad "read-only journal dir ($rc)"; cat "$T/out"; }
    chmod 700 "$T"
fi
# beyond loopback with a token_file configured but missing: the message says it is missing
"$PFID" --check -c "$SRC/examples/pfid.conf" -l 0.0.0.0:0 -t "$T/no-token" -j "$T/journal" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "token_file $T/no-token is missing (No such file or directory)" "$T/out" &&
    ! grep -q 'no token is configured' "$T/out" &&
    ok "--check: non-loopback with a missing token_file says it is missing" || { bad "missing token_file ($rc)"; cat "$T/out"; }
# a 3-byte token: warned, with the minimum pfi control --token-file applies too
(umask 077 && echo abc >"$T/short-token")
"$PFID" --check -c "$SRC/examples/pfid.conf" -t "$T/short-token" -j "$T/journal" >"$T/out" 2>&1
grep -q "token line-1 in $T/short-token is short (3 bytes, under 16)" "$T/out" &&
    ok "--check: a 3-byte token is warned about" || { bad "short token not warned"; cat "$T/out"; }
chmod 644 "$T/token"
"$PFID" --check -t "$T/token" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q 'mode 0600' "$T/out" && ok "token readable by others: refused" || { bad "token mode ($rc)"; cat "$T/out"; }
chmod 600 "$T/token"
"$PFID" --help | grep -q 'Usage: pfid' && ok "--help" || bad "--help"
"$PFID" --bogus >/dev/null 2>&1; [ $? -eq 2 ] && ok "unknown option: exit 2" || bad "unknown option"
# Every message an agent wrote came through pfid's log, and libmicrohttpd had nothing to say
# about how its server was started (e.g. a logger option that is not the first).
# shellcheck disable=SC2086
if cat $AGENT_LOGS | grep -v '^pfid: ' | grep -q . || cat $AGENT_LOGS | grep -q 'MHD_OPTION'; then
    bad "agent log lines that are not pfid's own, or libmicrohttpd's option warnings:"
    # shellcheck disable=SC2086
    cat $AGENT_LOGS | grep -v '^pfid: ' | head -3
    # shellcheck disable=SC2086
    cat $AGENT_LOGS | grep 'MHD_OPTION' | head -3
else
    ok "every log line is pfid's, none from libmicrohttpd about its options"
fi

exit $fail
