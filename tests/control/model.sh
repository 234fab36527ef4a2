#!/bin/sh
# End-to-end: pfi control --model (a `pfi fit` model applied to live features from
# Prometheus). A model of PFI on DRAM activity is fitted with `pfi fit` on a groups table
# named as the library and the run store name features (dcgm_dram_active); 2 pfid agents
# (dense-a and moe-a on one node, moe-b on the other: different DRAM activity) are scraped by
# Debian's Prometheus; the controller runs a 5 500 W event with the model. From the audit log:
#   - every job's curve comes from the model, in every period, with the PFI that
#     `pfi predict -m MODEL dcgm_dram_active=X` gives for the job's mean DRAM activity over
#     its GPUs when it runs uncapped (X read from Prometheus afterwards) — during the event
#     too: the model was fitted on reference-run features, and a capped job's DRAM activity
#     is not its reference's;
#   - a controller restarted during the event (same audit log and epoch), which finds the
#     jobs capped, continues with the model's PFIs from the audit log;
#   - the model's PFIs are not the class priors (the check can tell them apart);
#   - power within the budget two periods into the event.
# Skipped (77) without prometheus.
# usage: model.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
if ! command -v prometheus >/dev/null 2>&1; then
    echo "SKIP: prometheus not installed"
    exit 77
fi
. "$SRC/tests/control/lib.sh"
PERIOD=0.5
MARGIN=0.03

cat > "$WORK/groups.csv" <<'EOF'
group,job_class,pfi,dcgm_dram_active
g1,dense,1.10,0.05
g2,dense,1.22,0.10
g3,dense-ft,1.31,0.15
g4,moe-pt,1.52,0.22
g5,moe-pt,1.58,0.27
g6,moe-ft,1.92,0.38
g7,moe-ft,2.05,0.42
g8,moe-ft,2.30,0.50
EOF
"$PFI" fit "$WORK/groups.csv" --features dcgm_dram_active -m "$WORK/model.json" > "$WORK/fit.out" 2>&1
check $? "pfi fit writes the model"

: > "$WORK/agents"
start_agent node1 tok1 "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
start_agent node2 tok2 "moe-b:moe-pt:4:0.8:16000" || exit 1
start_prometheus
check $? "prometheus scrapes the agents"

# run_ctl RUN_FOR — the controller on the same epoch and audit log
EPOCH=$(python3 -c 'import time; print(time.time())')
run_ctl() {
    "$PFI" control --agents "$WORK/agents" --budget-w 5500 --start 2 --duration 4 \
        --epoch "$EPOCH" --prometheus "$PROM_URL" --model "$WORK/model.json" \
        --period $PERIOD --margin $MARGIN --run-for "$1" --db "$WORK/ctl.db" --keep-caps-on-exit \
        >> "$WORK/ctl.out" 2>> "$WORK/ctl.err" &
    CTL_PID=$!
    wait $CTL_PID
    check $? "pfi control --model ran"
    CTL_PID=""
}
# stopped in the event (the agents hold the caps), restarted: the restarted controller
# never sees the jobs uncapped until the event ends and takes the model's PFI from the log
run_ctl 3.6
run_ctl "$(python3 -c "import time; print(max(1.0, 7.5 - (time.time() - $EPOCH)))")"

# every GPU uncapped again: the jobs' reference DRAM activity, as Prometheus has it once it
# has scraped the uncapped agents (a bounded poll on the samples' own timestamps)
poll_until 10 agents_restored
check $? "every GPU back on its original limit"
t_restored=$(python3 -c 'import time; print(time.time())')
python3 - "$PROM_URL" "$t_restored" <<'PY'
import json, sys, time, urllib.parse, urllib.request
url, t = sys.argv[1], float(sys.argv[2])
end = time.time() + 20
while time.time() < end:
    q = urllib.parse.urlencode({"query": "min(timestamp(pfi_gpu_dram_active_ratio))"})
    r = json.load(urllib.request.urlopen(url + "/api/v1/query?" + q, timeout=5))["data"]["result"]
    # two agent samples (0.1 s apart) after the caps were seen restored
    if r and float(r[0]["value"][1]) > t + 0.3:
        sys.exit(0)
    time.sleep(0.1)
sys.exit(1)
PY
check $? "Prometheus has scraped the uncapped agents"
q() { curl -sf --max-time 5 "$PROM_URL/api/v1/query" --data-urlencode "query=$1"; }
q pfi_gpu_dram_active_ratio > "$WORK/dram.json"
q pfi_gpu_job_info > "$WORK/jobs.json"
python3 - "$WORK/dram.json" "$WORK/jobs.json" > "$WORK/features" <<'PY'
import json, sys
dram = {(r["metric"]["hostname"], r["metric"]["uuid"]): float(r["value"][1])
        for r in json.load(open(sys.argv[1]))["data"]["result"]}
per = {}
for r in json.load(open(sys.argv[2]))["data"]["result"]:
    m = r["metric"]
    per.setdefault(m["job"], []).append(dram[(m["hostname"], m["uuid"])])
for j, v in sorted(per.items()):
    print(j, sum(v) / len(v))
PY
: > "$WORK/expected"
while read -r job x; do
    est=$("$PFI" predict -m "$WORK/model.json" "dcgm_dram_active=$x" --format csv 2>/dev/null |
        awk -F, 'NR == 2 { print $2 }')
    echo "$job $x $est" >> "$WORK/expected"
done < "$WORK/features"
[ "$(wc -l < "$WORK/expected")" -eq 3 ]
check $? "pfi predict gives each job's PFI from its features"

py "$WORK/ctl.db" '
period, margin = float(args[0]), float(args[1])
want = {}
for l in open(args[2]):
    job, x, est = l.split()
    want[job] = min(3.0, max(1.05, float(est)))  # the controller keeps a PFI in [1.05, 3]
    print(f"  {job}: DRAM active {float(x):.4f}, pfi predict {float(est):.4f}")
prior = {"dense-a": 1.27, "moe-a": 2.10, "moe-b": 1.43}
bad = 0
rows = c.execute("select p.t_s, p.event, p.telemetry, j.job, j.source, j.pfi from ctl_jobs j "
                 "join ctl_periods p on p.id = j.period order by p.id").fetchall()
runs = c.execute("select run, min(event), max(event), count(*) from ctl_periods group by run "
                 "order by run").fetchall()
print("  runs (id, min event, max event, periods):", runs)
first2 = c.execute("select event from ctl_periods where run = ? order by id limit 1",
                   (runs[-1][0],)).fetchone()[0]
if len(runs) != 2 or first2 != 1:
    bad += 1; print("  the second controller did not start inside the event")
worst = {}
for t, ev, tel, job, src, pfi in rows:
    if tel != "prometheus":
        bad += 1; print(f"  t {t:.1f}: telemetry from {tel}"); continue
    if src != "model" or pfi is None:
        bad += 1; print(f"  t {t:.1f} {job}: curve from {src}, not the model"); continue
    d = abs(pfi - want[job])
    worst[job] = max(worst.get(job, 0), d)
    if d > 0.005:
        bad += 1; print(f"  t {t:.1f} {job} (event {ev}): PFI {pfi:.4f}, the model says {want[job]:.4f}")
print("  largest difference per job:", {j: round(v, 5) for j, v in worst.items()})
if not any(abs(want[j] - prior[j]) > 0.05 for j in want):
    bad += 1; print("  the model gives the priors: the check cannot tell")
t0 = c.execute("select min(wall_s) from ctl_periods where event = 1").fetchone()[0]
w = c.execute("select max(measured_w / budget_w) from ctl_periods where event = 1 and wall_s >= ?",
              (t0 + 2 * period,)).fetchone()[0]
print(f"  worst measured / budget {w:.3f}")
if not w or w > 1 + margin:
    bad += 1
sys.exit(1 if bad else 0)' "$PERIOD" "$MARGIN" "$WORK/expected"
check $? "every job on the model's curve, with the PFI of its uncapped features"

if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    echo "--- controller output"; cat "$WORK/ctl.out"; echo "--- stderr"; cat "$WORK/ctl.err"
fi
exit $fail
