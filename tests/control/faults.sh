#!/bin/sh
# Fault injection on the real controller and pfid agents (emulated GPUs), one class each
# (issue 16): a wrong agent token (every cap refused: 401), an infeasible budget, two
# controllers on one agent (fencing: the second gets 409), and SIGINT during an event (caps
# released by default; --keep-caps-on-exit says which stay). Each asserts the failure on
# stderr, in /metrics or the audit log, and in the exit code (5: budget not met), that the
# measured power is within 1.05 x the budget after the first confirmed decrease when the
# budget is feasible, and that every GPU is back on its original limit afterwards. Every
# wait is a bounded poll.
# usage: faults.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"
PERIOD=0.5

: > "$WORK/agents"
start_agent node1 tok1 "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
GOOD=$(cat "$WORK/agents")
URL=${GOOD%% *}

# wait_for CMD... — poll CMD every 0.1 s for up to 20 s
wait_for() {
    wf_n=0
    until "$@"; do
        wf_n=$((wf_n + 1))
        [ $wf_n -gt 200 ] && return 1
        sleep 0.1
    done
}

# capped — 0 when some GPU of the agent is below its original limit
capped() {
    curl -sf "$URL/v1/state" | python3 -c 'import json,sys
s=json.load(sys.stdin); sys.exit(0 if any(g["enforced_cap_w"] < g["original_cap_w"] - 0.5 for g in s["gpus"]) else 1)'
}

# after_decrease DB BUDGET — from the audit log: every event period from the one after the
# first confirmed decrease on has measured + reserved <= 1.05 x BUDGET
after_decrease() {
    py "$1" '
b = float(args[0])
first = c.execute("select min(period) from ctl_caps where phase = 1 and what = ?", ("confirmed",)).fetchone()[0]
if first is None:
    print("  no confirmed decrease"); sys.exit(1)
# from the period after the next: the agent readings in the one right after the decrease may
# still be samples from before it (sampled up to an interval earlier, on a loaded machine more)
rows = c.execute("select id, measured_w + coalesce(reserved_w, 0) from ctl_periods where event = 1 and id > ? + 1", (first,)).fetchall()
worst = max((m / b for _, m in rows), default=0)
print(f"  {len(rows)} periods after the first confirmed decrease, worst measured / budget {worst:.3f}")
sys.exit(0 if rows and worst <= 1.05 else 1)' "$2"
}

# after_restart DB BUDGET — from the audit log: every event period of the last run from its
# third on has measured + reserved <= 1.05 x BUDGET (a controller killed right after a PUT may
# have sent the caps in a period it never committed: the restarted run finds them in force,
# so it need not record a decrease of its own)
after_restart() {
    py "$1" '
b = float(args[0])
first = c.execute("select min(id) from ctl_periods where event = 1 and run = (select max(run) from ctl_periods)").fetchone()[0]
if first is None:
    print("  no event period in the restarted run"); sys.exit(1)
rows = c.execute("select id, measured_w + coalesce(reserved_w, 0) from ctl_periods where event = 1 and id > ? + 1 and run = (select max(run) from ctl_periods)", (first,)).fetchall()
worst = max((m / b for _, m in rows), default=0)
print(f"  {len(rows)} event periods of the restarted run from its third, worst measured / budget {worst:.3f}")
sys.exit(0 if rows and worst <= 1.05 else 1)' "$2"
}

# ---- 1. wrong token: every cap refused (401), loudly, exit 5 -----------------------------
echo "$URL wrong-token" > "$WORK/agents.bad"
"$PFI" control --agents "$WORK/agents.bad" --budget-w 3000 --period $PERIOD --run-for 3 \
    --listen 0 --db "$WORK/bad.db" > "$WORK/bad.out" 2> "$WORK/bad.err" &
CTL_PID=$!
PORT=$(wait_ctl_port "$WORK/bad.err")
wait_for sh -c "curl -sf http://127.0.0.1:$PORT/metrics | grep -q 'pfi_ctl_cap_refusals_total{agent=\"$URL\",reason=\"unauthorized\"} [1-9]'"
check $? "wrong token: pfi_ctl_cap_refusals_total{reason=unauthorized} counts in /metrics"
wait $CTL_PID
rc=$?
CTL_PID=""
[ $rc -eq 5 ]
check $? "wrong token: exit 5 (budget not met), got $rc"
grep -q "agent $URL: PUT /v1/caps: HTTP 401 unauthorized" "$WORK/bad.err"
check $? "wrong token: stderr names the agent and the reason"
n=$(grep -c "HTTP 401 unauthorized" "$WORK/bad.err")
[ "$n" -ge 3 ]
check $? "wrong token: one line per period ($n lines)"
"$PFI" control status --db "$WORK/bad.db" > "$WORK/bad.status"
grep -q "faults .*caps refused" "$WORK/bad.status"
check $? "wrong token: control status shows the refusals ($(grep faults "$WORK/bad.status"))"
# the per-job table tells a cap requested from one in force: every job's refused, none shown
# as if confirmed; the per-period note says why (not only stderr)
py "$WORK/bad.db" 'import re
jobs = [l.split() for l in open(args[0]).read().split("\n\n", 1)[1].splitlines()[1:] if l.strip()]
print("  jobs:", [(j[0], j[5], " ".join(j[6:8])) for j in jobs])
sys.exit(0 if jobs and all(" ".join(j[6:8]) == "refused (401)" for j in jobs) else 1)' "$WORK/bad.status"
check $? "wrong token: control status marks each job's cap refused (401), none in force"
grep -q "in_force" "$WORK/bad.status"
check $? "wrong token: control status has the in_force column"
grep -E -q "^ +[0-9.]+ .*caps refused by $URL \(HTTP 401\)" "$WORK/bad.out"
check $? "wrong token: the per-period table's note carries the refusal"
[ "$(sql "$WORK/bad.db" "SELECT COUNT(*) FROM ctl_periods WHERE note LIKE 'caps refused%401%'")" -ge 3 ]
check $? "wrong token: the audit log's note carries the refusal each period"
agents_restored
check $? "wrong token: every GPU on its original limit"

# ---- 2. an infeasible budget: exit 5, said every period ------------------------------------
"$PFI" control --agents "$WORK/agents" --budget-w 200 --period $PERIOD --run-for 3 \
    --db "$WORK/inf.db" > "$WORK/inf.out" 2> "$WORK/inf.err"
rc=$?
[ $rc -eq 5 ]
check $? "infeasible budget: exit 5, got $rc"
grep -q "budget infeasible (.* W short).*the budget is not met" "$WORK/inf.err"
check $? "infeasible budget: stderr says how far short"
agents_restored
check $? "infeasible budget: every GPU on its original limit (released on exit)"
# caps the agent confirmed are in force: status shows them in in_force, as requested
"$PFI" control status --db "$WORK/inf.db" > "$WORK/inf.status"
py "$WORK/inf.db" 'jobs = [l.split() for l in open(args[0]).read().split("\n\n", 1)[1].splitlines()[1:] if l.strip()]
print("  jobs:", [(j[0], j[5], j[6]) for j in jobs])
sys.exit(0 if jobs and all(j[6] == j[5] and j[6] != "-" for j in jobs) else 1)' "$WORK/inf.status"
check $? "infeasible budget: control status shows each confirmed cap in force"

# ---- 3. two controllers on one agent: the second is fenced off (409) -----------------------
"$PFI" control --agents "$WORK/agents" --budget-w 3000 --period $PERIOD --run-for 30 \
    --controller-id ctl-a --db "$WORK/a.db" > "$WORK/a.out" 2> "$WORK/a.err" &
CTL_PID=$!
A_PID=$CTL_PID
wait_for capped
check $? "controller a caps the agent"
"$PFI" control --agents "$WORK/agents" --budget-w 5000 --period $PERIOD --run-for 2.5 \
    --controller-id ctl-b --db "$WORK/b.db" > "$WORK/b.out" 2> "$WORK/b.err"
rc=$?
[ $rc -eq 5 ]
check $? "controller b: exit 5 (its caps refused), got $rc"
grep -q "HTTP 409 conflict (lease held by controller ctl-a" "$WORK/b.err"
check $? "controller b: stderr says who holds the lease"
grep -q "release: agent $URL: DELETE /v1/caps: HTTP 409 conflict" "$WORK/b.err"
check $? "controller b's release on exit is fenced off too (409)"
capped
check $? "controller a's caps are still in force after b exits"
# ---- 4. SIGINT: controller a releases every cap by default ----------------------------------
kill -INT $A_PID
wait $A_PID
rc=$?
CTL_PID=""
grep -q "caps released: every GPU back on its original limit" "$WORK/a.err"
check $? "SIGINT: the controller says it released the caps (exit $rc)"
agents_restored
check $? "SIGINT: every GPU on its original limit"
after_decrease "$WORK/a.db" 3000
check $? "controller a: measured power within 1.05 x budget after the first confirmed decrease"

# ---- 5. --keep-caps-on-exit: says which caps stay and until when -----------------------------
"$PFI" control --agents "$WORK/agents" --budget-w 3000 --period $PERIOD --run-for 30 \
    --keep-caps-on-exit > "$WORK/k.out" 2> "$WORK/k.err" &
CTL_PID=$!
wait_for capped
kill -INT $CTL_PID
wait $CTL_PID
CTL_PID=""
grep -q -- "--keep-caps-on-exit: the caps stay until the agents' lease ends at" "$WORK/k.err" &&
    grep -q -- "--keep-caps-on-exit: job .* keeps [0-9]* W per GPU" "$WORK/k.err"
check $? "--keep-caps-on-exit: which caps stay, and until when"
capped
check $? "--keep-caps-on-exit: the caps are still in force"
"$PFI" restore --help > /dev/null 2>&1
curl -sf -X DELETE -H "Authorization: Bearer tok1" "$URL/v1/caps" > /dev/null
agents_restored
check $? "after DELETE /v1/caps: every GPU on its original limit"
# ---- 6. kill -9 after PUT /v1/budget: the restarted controller resumes the budget -----------
(umask 077 && printf 'ctl-secret\n' > "$WORK/ctl-token")
start_api_ctl() {
    "$PFI" control --agents "$WORK/agents" --listen 0 --token-file "$WORK/ctl-token" \
        --period $PERIOD --run-for 60 --db "$WORK/api.db" > "$WORK/api.out" 2> "$WORK/api.err" &
    CTL_PID=$!
    PORT=$(wait_ctl_port "$WORK/api.err")
}
start_api_ctl
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer ctl-secret" \
    -d '{"budget_w": 3000}' "http://127.0.0.1:$PORT/v1/budget")
[ "$code" = 200 ]
check $? "PUT /v1/budget 3000 W: HTTP $code"
kill -9 $CTL_PID
wait $CTL_PID 2>/dev/null
: > "$WORK/api.err"
start_api_ctl
grep -q "resumed from $WORK/api.db the target PUT /v1/budget set" "$WORK/api.err"
check $? "restarted controller says it resumed the stored budget"
wait_for sh -c "curl -sf http://127.0.0.1:$PORT/metrics | grep -q '^pfi_ctl_budget_watts 3000$'"
check $? "restarted controller: the budget in force is 3000 W again"
wait_for capped
check $? "restarted controller: the caps are in force"
wait_for sh -c "[ \"\$(python3 -c \"import sqlite3; print(sqlite3.connect('$WORK/api.db').execute('select count(*) from ctl_periods where event = 1').fetchone()[0])\" 2>/dev/null)\" -ge 6 ]"
check $? "restarted controller: six event periods"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer ctl-secret" \
    -d '{"event": false}' "http://127.0.0.1:$PORT/v1/budget")
wait_for agents_restored
check $? "{\"event\": false}: every GPU on its original limit"
kill -TERM $CTL_PID
wait $CTL_PID
CTL_PID=""
after_restart "$WORK/api.db" 3000
check $? "resumed budget: measured power within 1.05 x budget from the restarted run's third event period"

# ---- 7. an agent that never answers: status says nothing was measured ('-'), not 0 W --------
echo "http://127.0.0.1:$(free_port) tok-unreachable-0123456789" > "$WORK/agents.dead"
# (and a 3-byte --token-file: warned about as pfid warns about it, the same check)
(umask 077 && echo abc > "$WORK/short-token")
"$PFI" control --agents "$WORK/agents.dead" --budget-w 3000 --period $PERIOD --run-for 1 \
    --listen 0 --token-file "$WORK/short-token" --db "$WORK/dead.db" \
    > "$WORK/dead.out" 2> "$WORK/dead.err"
grep -q "warning: token line-1 in $WORK/short-token is short (3 bytes, under 16)" "$WORK/dead.err"
check $? "--token-file with a 3-byte token: warned, as pfid warns"
"$PFI" control status --db "$WORK/dead.db" > "$WORK/dead.status"
grep -E -q '^measured +- ' "$WORK/dead.status"
check $? "unreachable agent: status says measured - ($(grep '^measured' "$WORK/dead.status"))"
# a reduction of a reference never learnt (the only agent silent from the start): the budget
# and the prediction are missing (null, -), never 0 W
"$PFI" control --agents "$WORK/agents.dead" --reduction 30% --period $PERIOD --run-for 1 \
    --db "$WORK/dead2.db" > "$WORK/dead2.out" 2> "$WORK/dead2.err"
"$PFI" control status --db "$WORK/dead2.db" --json > "$WORK/dead2.json"
python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
print("  budget_w", s["budget_w"], "predicted_w", s["predicted_w"], "event", s["event"])
sys.exit(0 if s["event"] and s["budget_w"] is None and s["predicted_w"] is None else 1)' "$WORK/dead2.json"
check $? "a reduction with no reference known: budget and prediction null, not 0"
awk '$1 != "t_s" && $2 == "yes" && ($3 != "-" || $6 != "-") { bad = 1 } END { exit bad }' "$WORK/dead2.out"
check $? "the period lines print - for the budget and the prediction"
exit $fail
