#!/bin/sh
# End-to-end: the per-job caps pfi control reports are the ones its last period applied, not
# the ones it read before them. One pfid agent (2 jobs of 2 emulated GPUs, 700 W limits), a
# 900 W budget from the start and 5 s periods: the first period (the jobs' power settled
# before it, about 1 550 W) brings every cap down. Its GET /metrics (taken while the audit
# log holds that one period only) gives each job's pfi_ctl_job_cap_watts equal to the cap the
# agent enforces on all the job's GPUs and to the audit log's confirmed cap, below 700 W (the
# caps read before the period were 700 W: the gauge lagged a period behind). Stopped with
# --keep-caps-on-exit, the controller names for each job the cap the agent still holds.
# usage: job_caps_now.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"

: > "$WORK/agents"
start_agent node1 tok1 "dense-a:dense:2:0.93:24000" "moe-a:moe-ft:2:0.55:9000" || exit 1
# the jobs' power settled (about 1 550 W) before the first period reads it: that period's
# caps come down for the 900 W budget
wait_power_settled "$WORK/agents"
check $? "the emulated jobs' power settled"
"$PFI" control --agents "$WORK/agents" --budget-w 900 --listen 0 --period 5 --run-for 120 \
    --db "$WORK/audit.db" --keep-caps-on-exit > "$WORK/ctl.out" 2> "$WORK/ctl.err" &
CTL_PID=$!
PORT=$(wait_ctl_port "$WORK/ctl.err")
[ -n "$PORT" ] || { echo "FAIL: the controller did not listen"; cat "$WORK/ctl.err"; exit 1; }

# agents_caps — {job: [enforced caps of its GPUs]} from the agent's GET /v1/state
agents_caps() {
    while read -r url tok; do curl -sf --max-time 5 "$url/v1/state"; echo; done < "$WORK/agents" |
        python3 -c 'import json, sys
caps = {}
for line in sys.stdin:
    if line.strip():
        for g in json.loads(line)["gpus"]:
            caps.setdefault(g["job"], []).append(g["enforced_cap_w"])
print(json.dumps(caps))'
}
periods() { sql "$WORK/audit.db" "select count(*) from ctl_periods" 2>/dev/null; }
# first_snapshot — /metrics once it has the jobs' caps, with the agent's caps read while the
# audit log holds the first period only (the gauges are that period's)
first_snapshot() {
    curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" > "$WORK/metrics" &&
        grep -q '^pfi_ctl_job_cap_watts{' "$WORK/metrics" || return 1
    agents_caps > "$WORK/agents.json"
    [ "$(periods)" = 1 ]
}
poll_until 60 first_snapshot
check $? "GET /metrics with the jobs' caps while the audit log holds the first period only"
sql "$WORK/audit.db" "select json_group_object(job, cap_w) from ctl_jobs
    where cap_state = 'confirmed' and period = (select min(id) from ctl_periods)" > "$WORK/audit.json"
python3 - "$WORK/metrics" "$WORK/agents.json" "$WORK/audit.json" <<'PY'
import json, sys
gauge = {}
for l in open(sys.argv[1]):
    if l.startswith("pfi_ctl_job_cap_watts{"):
        gauge[l.split('"')[1]] = float(l.split()[-1])
agents = json.load(open(sys.argv[2]))
audit = json.load(open(sys.argv[3]))
print(f"  gauge {gauge}; agent enforces {agents}; audit log confirmed {audit}")
ok = set(gauge) == {"dense-a", "moe-a"} == set(agents) == set(audit)
for j in gauge:
    ok &= all(abs(c - gauge[j]) <= 0.5 for c in agents.get(j, [None]) if c is not None)
    ok &= abs(audit.get(j, -1) - gauge[j]) <= 0.5 and gauge[j] < 699.5
sys.exit(0 if ok else 1)
PY
check $? "pfi_ctl_job_cap_watts: the caps the first period applied (the agent's, the audit log's), below 700 W"

kill -TERM $CTL_PID
wait $CTL_PID
check $? "controller stopped cleanly"
CTL_PID=""
agents_caps > "$WORK/agents.json"
python3 - "$WORK/ctl.err" "$WORK/agents.json" <<'PY'
import json, re, sys
said = {m.group(1): float(m.group(2)) for m in
        re.finditer(r"job (\S+) keeps (\d+) W per GPU", open(sys.argv[1]).read())}
agents = json.load(open(sys.argv[2]))
print(f"  --keep-caps-on-exit says {said}; the agent holds {agents}")
ok = set(said) == set(agents) and all(abs(c - said[j]) <= 0.5 for j in agents
                                      for c in agents[j])
sys.exit(0 if ok else 1)
PY
check $? "--keep-caps-on-exit names the caps the agent holds"
exit $fail
