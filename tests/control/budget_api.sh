#!/bin/sh
# End-to-end: the controller's own HTTP API (--listen, --token-file) against 2 pfid agents
# (3 emulated jobs, 12 GPUs): a controller started without a target waits uncapped; bad
# requests (no or wrong token, bad JSON, out-of-range values, a body over 4 KiB, an unknown
# endpoint) change nothing; then PUT /v1/budget sets 5500 W, 4500 W, a 20 % reduction and
# {"event": false} in turn. After each PUT the controller's budget (GET /metrics and the audit
# log) is the new one from the next period on, the caps the agents hold are the ones it
# reports, measured power (audit log and the agents' own readings) stays within the budget
# two periods after each change, and {"event": false} puts every GPU back on its original
# limit. The API listens on 127.0.0.1 only.
# usage: budget_api.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"
PERIOD=0.5
MARGIN=0.03

: > "$WORK/agents"
start_agent node1 tok1 "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
start_agent node2 tok2 "moe-b:moe-pt:4:0.8:16000" || exit 1
TOKEN=ctl-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
(umask 077 && printf '%s\n' "$TOKEN" > "$WORK/ctl-token")

# stopped with SIGTERM when the requests are done (--run-for only bounds a stuck test)
"$PFI" control --agents "$WORK/agents" --listen 0 --token-file "$WORK/ctl-token" \
    --period $PERIOD --margin $MARGIN --run-for 90 --db "$WORK/api.db" \
    > "$WORK/ctl.out" 2> "$WORK/ctl.err" &
CTL_PID=$!
PORT=$(wait_ctl_port "$WORK/ctl.err")
[ -n "$PORT" ]
check $? "the controller reports the port it listens on"
[ -n "$PORT" ] || { cat "$WORK/ctl.err"; exit 1; }
BASE="http://127.0.0.1:$PORT"

# the API socket is bound to loopback only (not 0.0.0.0 / ::)
python3 - "$PORT" <<'PY'
import sys
port = int(sys.argv[1])
found = []
for f, any_addr in (("/proc/net/tcp", "00000000"), ("/proc/net/tcp6", "0" * 32)):
    try:
        lines = open(f).read().splitlines()[1:]
    except OSError:
        continue
    for l in lines:
        x = l.split()
        addr, p = x[1].split(":")
        if int(p, 16) == port and x[3] == "0A":
            found.append(addr)
print("  listening sockets on the API port:", found)
sys.exit(0 if found and all(a == "0100007F" for a in found) else 1)
PY
check $? "the API listens on 127.0.0.1 only"

# put BODY [TOKEN|-] — PUT /v1/budget; sets CODE, the answer in $WORK/body
put() {
    tok=${2:-$TOKEN}
    if [ "$tok" = - ]; then
        CODE=$(curl -s -o "$WORK/body" -w '%{http_code}' --max-time 5 -X PUT \
            --data-binary "$1" "$BASE/v1/budget")
    else
        CODE=$(curl -s -o "$WORK/body" -w '%{http_code}' --max-time 5 -X PUT \
            -H "Authorization: Bearer $tok" --data-binary "$1" "$BASE/v1/budget")
    fi
}
expect() { [ "$CODE" = "$2" ]; check $? "$1: HTTP $CODE (want $2) $(head -c 120 "$WORK/body")"; }
# metric NAME — its value in GET /metrics (empty when absent)
metric() { curl -sf --max-time 5 "$BASE/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
now() { python3 -c 'import time; print(time.time())'; }

# a few uncapped periods (counted in the audit log): the jobs' references are learned
wait_periods "$WORK/api.db" 3
check $? "three uncapped periods recorded"
[ "$(metric pfi_ctl_event_active)" = 0 ]
check $? "no target given: no event"

# ---- requests that must change nothing ------------------------------------------------------
put '{"budget_w": 1000}' -;                   expect "no token" 401
put '{"budget_w": 1000}' "x$TOKEN";           expect "wrong token" 401
put '{"budget_w": 1000}' "$(printf '%s' "$TOKEN" | cut -c2-)"; expect "token suffix" 401
put '{"budget_w": 1000';                      expect "bad JSON" 400
put '{"budget_w": 1000, "budget_w": 900}';    expect "duplicate key" 400
put '{"budget_w": 1000, "reduction": 0.2}';   expect "budget and reduction" 400
put '{"budget_w": "1000"}';                   expect "budget as a string" 400
put '{}';                                     expect "empty object" 400
put '{"budget_w": -5}';                       expect "negative budget" 422
put '{"budget_w": 0}';                        expect "zero budget" 422
put '{"reduction": 1.5}';                     expect "reduction over 1" 422
put '{"budget_w": 0.5}';                      expect "budget under 1 W" 422
put '{"budget_w": 1e-300}';                   expect "budget 1e-300 W" 422
put '{"budget_w": 5000, "bogus": 1}';         expect "an unknown key beside a budget" 400
put '{"budget_W": 5000}';                     expect "a misspelt key" 400
CODE=$(curl -s -o "$WORK/body" -w '%{http_code}' --max-time 5 -X POST \
    -H "Authorization: Bearer $TOKEN" --data-binary '{"budget_w": 1000}' "$BASE/v1/budget")
expect "POST /v1/budget" 405
big=$(python3 -c 'print("{\"budget_w\": 1000, \"pad\": \"" + "x" * 5000 + "\"}")')
put "$big";                                   expect "body over 4 KiB" 413
put "$big" -;                                 expect "body over 4 KiB, no token: refused first" 401
CODE=$(curl -s -o "$WORK/body" -w '%{http_code}' --max-time 5 "$BASE/v1/budget")
expect "GET /v1/budget: a known path, another method" 405
# three more periods after the refused requests
n_before=$(sql "$WORK/api.db" "select count(*) from ctl_periods")
wait_periods "$WORK/api.db" $((n_before + 3))
check $? "three more periods recorded"
[ "$(metric pfi_ctl_event_active)" = 0 ]
check $? "after the refused requests: still no event"

# ---- budgets --------------------------------------------------------------------------------
: > "$WORK/puts"
# step LABEL BODY — PUT it (recording the wall time), then wait for the caps to settle: a
# bounded poll until the audit log holds 5 periods begun after the PUT (the check below
# wants the third on within the budget)
step() {
    t=$(now)
    put "$2"
    expect "PUT $2" 200
    echo "$1 $t" >> "$WORK/puts"
    wait_periods "$WORK/api.db" 5 "wall_s > $t"
    check $? "$1: five periods after the PUT"
}
# agents_power — the agents' own sum of GPU power and the caps they hold, per job
agents_view() {
    while read -r url tok; do curl -sf --max-time 5 "$url/v1/state"; echo; done < "$WORK/agents" |
        python3 -c 'import json, sys
p, caps = 0.0, {}
for line in sys.stdin:
    if not line.strip():
        continue
    s = json.loads(line)
    for g in s["gpus"]:
        p += g["power_w"] or 0
        caps.setdefault(g["job"], set()).add(g["enforced_cap_w"])
print(p, json.dumps({j: sorted(c) for j, c in caps.items()}))'
}
# budget_now WANT [TOL] — /metrics budget == WANT ± TOL (1 W), the agents draw within it,
# and each job's cap on the agents is the controller's pfi_ctl_job_cap_watts
budget_now() {
    got=$(metric pfi_ctl_budget_watts)
    python3 -c "import sys; sys.exit(0 if abs(float('${got:-nan}') - $1) <= ${2:-1} else 1)"
    check $? "GET /metrics budget $got W (want $1)"
    [ "$(metric pfi_ctl_event_active)" = 1 ]
    check $? "event active"
    view=$(agents_view)
    curl -sf --max-time 5 "$BASE/metrics" > "$WORK/metrics"
    python3 - "$1" "$MARGIN" "$WORK/metrics" "$view" <<'PY'
import json, sys
budget, margin = float(sys.argv[1]), float(sys.argv[2])
power, caps = sys.argv[4].split(" ", 1)
power, caps = float(power), json.loads(caps)
ctl = {}
for l in open(sys.argv[3]):
    if l.startswith("pfi_ctl_job_cap_watts{"):
        ctl[l.split('"')[1]] = float(l.split()[-1])
print(f"  agents draw {power:.0f} W under a {budget:.0f} W budget; caps {caps}; controller {ctl}")
ok = power <= budget * (1 + margin) and any(c[0] < 700 for c in caps.values())
for j, c in caps.items():
    ok &= len(c) == 1 and j in ctl and abs(c[0] - ctl[j]) <= 0.5
sys.exit(0 if ok else 1)
PY
    check $? "the agents hold the controller's caps and draw within $1 W"
}

step b5500 '{"budget_w": 5500}'
budget_now 5500
step b4500 '{"budget_w": 4500}'
budget_now 4500
step r20 '{"reduction": 0.2}'
ref=$(sql "$WORK/api.db" "select ref_w from ctl_periods where budget_w is not null order by id desc limit 1")
want=$(python3 -c "print(round(0.8 * $ref, 3))")
budget_now "$want" "$(python3 -c "print(0.01 * $want)")"
step off '{"event": false}'
[ "$(metric pfi_ctl_event_active)" = 0 ]
check $? "{\"event\": false}: event over"
agents_restored
check $? "{\"event\": false}: every GPU back on its original limit"

kill -TERM $CTL_PID
wait $CTL_PID
check $? "controller stopped cleanly"
CTL_PID=""

# ---- the audit log: each budget from the period after its PUT, within it 2 periods later ----
py "$WORK/api.db" '
period, margin = float(args[0]), float(args[1])
puts = [l.split() for l in open(args[2])]
rows = c.execute("select wall_s, event, budget_w, measured_w, ref_w from ctl_periods order by id").fetchall()
bad = 0
def want(i):  # the budget PUT i asks for, given the reference power of the period
    return {"b5500": lambda r: 5500.0, "b4500": lambda r: 4500.0,
            "r20": lambda r: 0.8 * r, "off": lambda r: None}[puts[i][0]]
first = []  # the first period carrying each PUT
k = 0
for i, (label, t) in enumerate(puts):
    t = float(t)
    end = float(puts[i + 1][1]) if i + 1 < len(puts) else float("inf")
    mine = [r for r in rows if r[0] > t + 1e-3 and r[0] < end]
    if not mine:
        print("  no period after", label); bad += 1; continue
    # periods recorded more than a period (plus the period itself) after the PUT carry it
    late = [r for r in mine if r[0] > t + 2 * period + 0.5]
    for r in late:
        w = want(i)(r[4])
        if w is None:
            ok = r[1] == 0 and r[2] is None
        else:
            ok = r[1] == 1 and r[2] is not None and abs(r[2] - w) <= 1
        if not ok:
            bad += 1; print("  period at", round(r[0] - t, 2), "s after", label, "has", r[1:3])
    n_in = [r for r in mine if r[1] == (0 if label == "off" else 1)]
    if n_in:
        delay = n_in[0][0] - t
        print(f"  {label}: in force {delay:.2f} s after the PUT")
        if delay > 2 * period + 0.5:
            bad += 1; print("  too late")
    if label != "off":
        settled = [r for r in mine if r[1] == 1][2:]
        worst = max((r[3] / r[2] for r in settled), default=0)
        print(f"  {label}: {len(settled)} settled periods, worst measured/budget {worst:.3f}")
        if not settled or worst > 1 + margin:
            bad += 1
pre = [r for r in rows if r[0] < float(puts[0][1])]
if any(r[1] for r in pre):
    bad += 1; print("  an event before the first PUT")
sys.exit(1 if bad else 0)' "$PERIOD" "$MARGIN" "$WORK/puts"
check $? "audit: every budget in force from the period after its PUT, power within it"

if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    echo "--- controller output"; cat "$WORK/ctl.out"; echo "--- stderr"; cat "$WORK/ctl.err"
fi
exit $fail
