# Shared by the feature tests in tests/control (budget API, schedule, facility limit, policy,
# curve sources): source it after setting PFI, PFI_AGENT_BIN and SRC. It makes $WORK, loads
# scripts/cluster-lib.sh (emulated pfid agents on ports they pick themselves, so parallel
# ctest runs never collide) and installs a trap that stops the controller(s) and every agent
# and removes $WORK on exit.

# files the tests write (agents files with tokens) are the user's alone, as pfi control wants
umask 077
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pfi-ctl-test.XXXXXX")
. "$SRC/scripts/cluster-lib.sh"
CTL_PID=""
ctl_test_cleanup() {
    for p in $CTL_PID; do kill -9 "$p" 2>/dev/null; done
    for p in $CTL_PID; do wait "$p" 2>/dev/null; done
    CTL_PID=""
    cluster_cleanup
    rm -rf "$WORK"
}
trap 'ctl_test_cleanup' EXIT
trap 'exit 2' HUP INT TERM PIPE
fail=0
check() { if [ "$1" -ne 0 ]; then echo "FAIL: $2"; fail=1; else echo "ok: $2"; fi; }

# sql DB QUERY — the first column of the first row (empty when none).
sql() {
    python3 - "$1" "$2" <<'PY'
import sqlite3, sys
r = sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()
print("" if r is None or r[0] is None else r[0])
PY
}

# py DB SCRIPT ARGS... — run a Python check with c = sqlite3 connection to DB, argv after it;
# its exit status is the check's.
py() {
    db=$1 script=$2
    shift 2
    python3 -c "import sqlite3, sys, json
c = sqlite3.connect(sys.argv[1])
args = sys.argv[2:]
$script" "$db" "$@"
}

# poll_until SECONDS CMD... — a bounded poll: run CMD every 0.1 s until it succeeds (0) or
# SECONDS have passed (1). Every wait of a test is one of these, never a fixed sleep: on a
# loaded 2-core machine a period, a scrape or a start-up takes as long as it takes.
poll_until() {
    pu_end=$(( $(date +%s) + $1 ))
    shift
    until "$@"; do
        [ "$(date +%s)" -ge "$pu_end" ] && return 1
        sleep 0.1
    done
}

# periods_at_least DB N [WHERE] — 0 when the audit log DB holds at least N control periods
# (those matching the SQL condition WHERE, when given); 1 otherwise (also while unreadable).
periods_at_least() {
    pal_n=$(sql "$1" "select count(*) from ctl_periods where ${3:-1}" 2>/dev/null)
    [ "${pal_n:-0}" -ge "$2" ] 2>/dev/null
}

# wait_periods DB N [WHERE] — a bounded poll (60 s) until periods_at_least DB N [WHERE]: a
# test that lets the controller run "a few periods" counts them rather than sleeping.
wait_periods() { poll_until 60 periods_at_least "$@"; }

# wait_ctl_port ERRFILE — the port a controller started with --listen 0 reports on stderr.
wait_ctl_port() {
    wp_n=0
    while ! grep -q 'listening on 127.0.0.1:' "$1" 2>/dev/null; do
        wp_n=$((wp_n + 1))
        [ $wp_n -gt 200 ] && return 1
        sleep 0.05
    done
    sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$1" | head -1
}

# The agents' own power, summed, every 0.2 s into OUT ("epoch_s total_w" lines) until an agent
# stops answering: the truth the controller's readings are checked against.
# usage: start_truth_sampler AGENTS_FILE OUT; sets TRUTH_PID
start_truth_sampler() {
    python3 - "$1" "$2" <<'PY' &
import json, sys, time, urllib.request
agents = [l.split()[0] for l in open(sys.argv[1]) if l.strip()]
with open(sys.argv[2], "w", buffering=1) as out:
    while True:
        try:
            tot = sum(g["power_w"] or 0 for a in agents
                      for g in json.load(urllib.request.urlopen(a + "/v1/state", timeout=2))["gpus"])
            out.write(f"{time.time():.2f} {tot:.1f}\n")
        except Exception:
            break
        time.sleep(0.2)
PY
    TRUTH_PID=$!
}

# wait_power_settled AGENTS_FILE: a bounded poll (100 tries, 0.3 s apart) until the agents'
# summed GPU power has settled: three readings in a row within 1 % of each other, so that a
# controller started then learns each job's reference from settled power, not from emulated
# jobs still ramping up (a reference learnt then is low: pfi-control.md). Exit status 0 when
# settled, 1 when not in time.
wait_power_settled() {
    python3 - "$1" <<'PY'
import json, sys, time, urllib.request
agents = [l.split()[0] for l in open(sys.argv[1]) if l.strip()]
last = []
for _ in range(100):
    tot = sum(g["power_w"] or 0 for a in agents
              for g in json.load(urllib.request.urlopen(a + "/v1/state", timeout=2))["gpus"])
    last = (last + [tot])[-3:]
    if len(last) == 3 and min(last) > 0 and max(last) <= 1.01 * min(last):
        sys.exit(0)
    time.sleep(0.3)
sys.exit(1)
PY
}

# job_cap_bounds AGENTS_FILE: each job's lowest and top caps (W per GPU) from its agents'
# GET /v1/state, as JSON {"lo": {job: W}, "top": {job: W}} on stdout (the largest minimum
# and the smallest default limit over the job's GPUs).
job_cap_bounds() {
    python3 - "$1" <<'PY'
import json, sys, urllib.request
lo, top = {}, {}
for l in open(sys.argv[1]):
    for g in json.load(urllib.request.urlopen(l.split()[0] + "/v1/state", timeout=2))["gpus"]:
        j = g.get("job") or ""
        if j:
            lo[j] = max(lo.get(j, 0), g["min_cap_w"])
            top[j] = min(top.get(j, 1e9), g["original_cap_w"])
print(json.dumps({"lo": lo, "top": top}))
PY
}

# write_children RACK...: $WORK/children (mode 600), a line "URL TOKEN" per rack controller
# started with --listen 0 (its port from $WORK/rackR.err by wait_ctl_port, its token
# $WORK/tokenR); 1, with the rack's stderr shown, when one did not listen.
write_children() {
    : > "$WORK/children"
    for r in "$@"; do
        port=$(wait_ctl_port "$WORK/rack$r.err")
        [ -n "$port" ] || { echo "rack $r did not listen"; cat "$WORK/rack$r.err"; return 1; }
        echo "http://127.0.0.1:$port $(cat "$WORK/token$r")" >> "$WORK/children"
    done
    chmod 600 "$WORK/children"
}
