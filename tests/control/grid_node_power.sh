#!/bin/sh
# End-to-end: a measured node-power source (pfid's node_power_file) for facility targets.
# node1 (4 GPUs) reads a file of watts that excludes its GPUs (a CPU-side meter: 250 W, all
# non-GPU); node2 (4 GPUs) has no source (--non-gpu-w 400 stands for it); node3, outside the
# controller, reads a whole-node meter (its non-GPU part is the reading less its GPUs) and then
# a RAPL-style microjoule counter that a writer advances at 180 W. Checked: each pfid's
# /v1/state and /metrics, a bad reading (missing, named, then readable again), and the
# controller's GPU budget under a 6 000 W facility target: 6 000 − 250 − 400 = 5 350 W.
# usage: grid_node_power.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"

echo 250 > "$WORK/node1.w"
# node1's file is written once: not checked for a frozen source (node_power_frozen_after 0)
PFI_AGENT_EXTRA="node_power_file = $WORK/node1.w
node_power_frozen_after = 0
node_power_includes_gpus = false" start_agent node1 tok1 "dense-a:dense:4:0.93:24000" || exit 1
start_agent node2 tok2 "moe-b:moe-pt:4:0.8:16000" || exit 1
cp "$WORK/agents" "$WORK/agents.ctl"
echo 3000 > "$WORK/node3.w"
PFI_AGENT_EXTRA="node_power_file = $WORK/node3.w" start_agent node3 tok3 "dense-c:dense:4:0.9:20000" || exit 1
PID3=$AGENT_PID
URL3=$(sed -n 3p "$WORK/agents" | cut -d' ' -f1)
URL1=$(sed -n 1p "$WORK/agents" | cut -d' ' -f1)

# state URL TOKEN CHECK — poll (at most 10 s) until CHECK (Python on s, the /v1/state JSON) holds
state() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys, time, urllib.request
url, tok, cond = sys.argv[1], sys.argv[2], sys.argv[3]
end = time.time() + 10
while True:
    rq = urllib.request.Request(url + "/v1/state", headers={"Authorization": "Bearer " + tok})
    s = json.load(urllib.request.urlopen(rq, timeout=2))
    try:
        if eval(cond):
            sys.exit(0)
    except (KeyError, TypeError):
        pass
    if time.time() > end:
        print("  last state node:", s.get("node"), "GPUs:", [g["power_w"] for g in s["gpus"]])
        sys.exit(1)
    time.sleep(0.1)
PY
}
state "$URL1" tok1 's["node"]["power_w"] == 250 and s["node"]["non_gpu_w"] == 250'
check $? "node1: 250 W read, all of it non-GPU (node_power_includes_gpus = false)"
state "$URL3" tok3 's["node"]["power_w"] == 3000 and all(g["power_w"] for g in s["gpus"]) and abs(s["node"]["non_gpu_w"] - (3000 - sum(g["power_w"] for g in s["gpus"]))) < 1e-6 and s["node"]["non_gpu_w"] < 3000 - 4 * 100'
check $? "node3: a whole-node meter's non-GPU part is 3000 W less its GPUs' power"
curl -s "$URL1/metrics" | grep -q '^pfi_node_non_gpu_power_watts{hostname="node1"} 250$'
check $? "/metrics: pfi_node_non_gpu_power_watts"
echo "12 kW" > "$WORK/node3.w"
state "$URL3" tok3 's["node"]["power_w"] is None and s["node"]["non_gpu_w"] is None and "node3.w" in (s["node"]["error"] or "") and "expected one number" in (s["node"]["error"] or "")'
check $? "a bad reading: missing (null), the error names the file and what was expected"
grep -q "node power: .*node3.w: expected one number" "$WORK/agent.node3.log"
check $? "pfid logs the bad reading"
echo 2900 > "$WORK/node3.w"
state "$URL3" tok3 's["node"]["power_w"] == 2900 and s["node"]["error"] is None'
check $? "readable again"

# node3 on a microjoule counter (RAPL's energy_uj) that a writer advances at 180 W
python3 - "$WORK/node3.uj" <<'PY' &
import os, sys, time
t0, e = time.monotonic(), 5e12
while True:
    t = time.monotonic()
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d\n" % (e + 180e6 * (t - t0)))
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(0.02)
PY
WRITER=$!
CTL_PID="$WRITER"
sed -i "s|^node_power_file = .*node3.w|node_power_file = $WORK/node3.uj\nnode_power_kind = energy_uj\nnode_power_includes_gpus = false\nnode_power_frozen_after = 1.5|" "$WORK/agent.node3/pfid.conf"
kill -HUP "$PID3"
state "$URL3" tok3 's["node"]["power_w"] is not None and abs(s["node"]["power_w"] - 180) < 18 and s["node"]["source"].endswith("node3.uj")'
check $? "an energy_uj counter (after SIGHUP): 180 W within 10 %"

"$PFI" control --agents "$WORK/agents.ctl" --budget-w 6000 --start 1.0 --duration 3.0 \
    --non-gpu-w 400 --period 0.5 --run-for 4.5 --db "$WORK/ctl.db" > "$WORK/ctl.out" 2> "$WORK/ctl.err"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 6 ]
check $? "pfi control --non-gpu-w 400 ran (exit $rc)"
grep -q 'non-GPU power: 1 of 2 nodes measured (node_power_file), the rest 400 W each: 650 W' "$WORK/ctl.err"
check $? "the controller says which nodes were measured"
py "$WORK/ctl.db" '
rows = c.execute("select t_s, budget_w from ctl_periods where event = 1 order by id").fetchall()
bad = [(t, b) for t, b in rows if b is None or abs(b - 5350) > 1e-6]
print(f"  {len(rows)} event periods; GPU budgets other than 5350 W: {bad}")
sys.exit(1 if bad or len(rows) < 4 else 0)'
check $? "GPU budget = 6000 W less node1 measured 250 W less node2 400 W = 5350 W"
# the counter's writer stops: after 1.5 s unmoved node3's reading is frozen — missing (not
# its last number), flagged in /v1/state and /metrics, logged
kill "$WRITER" 2>/dev/null
state "$URL3" tok3 's["node"]["power_w"] is None and s["node"]["frozen"] is True and "frozen: neither its value" in (s["node"]["error"] or "")'
check $? "a frozen energy counter: power missing, frozen true, the error says why"
curl -s "$URL3/metrics" | grep -q '^pfi_node_power_frozen{hostname="node3"} 1$' &&
    curl -s "$URL3/metrics" | grep -q '^pfi_node_power_frozen_total{hostname="node3"} 1$' &&
    ! curl -s "$URL3/metrics" | grep -q '^pfi_node_power_watts{hostname="node3"}'
check $? "/metrics: pfi_node_power_frozen 1, counted once, no pfi_node_power_watts"
grep -q "node power: .*node3.uj: frozen" "$WORK/agent.node3.log"
check $? "pfid logs the frozen source"
# the counter moves again (a writer advancing it every 0.1 s) until pfid says so: a bounded
# poll, not two writes a fixed time apart that a slow sampler could see as one
python3 - "$WORK/node3.uj" <<'PY' &
import os, sys, time
e = 6000000000000
while True:
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d\n" % e)
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    e += 18000000
    time.sleep(0.1)
PY
WRITER=$!
CTL_PID="$WRITER"
state "$URL3" tok3 's["node"]["frozen"] is False and s["node"]["error"] is None'
check $? "the counter moving again: not frozen"
kill "$WRITER" 2>/dev/null
if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    for f in "$WORK"/*.out "$WORK"/*.err "$WORK"/agent.*.log; do echo "--- $f"; cat "$f"; done
fi
exit $fail
