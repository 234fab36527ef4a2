#!/bin/sh
# End-to-end: Slurm's --pfi-flex and the grid event's tiers are one mechanism. Two jobs on
# an emulated node, as Slurm reports them (a stand-in squeue: job 101 with --pfi-flex=2 in
# its AdminComment as pfi_spank.so leaves it, job 102 with pfi-flex=flex3 in its Comment),
# a 35 % event on the emulated clock, run twice on fresh agents: once with pfi control
# --slurm and no tiers file, once with --tiers (101 Flex 2, 102 Flex 3) and a policy giving
# the weights --slurm gives those tiers (medium 2, high 1). Asserts: the --slurm run
# accounts job 101 as Flex 2 (allowance 25 %) and 102 as Flex 3 (50 %), each within its
# tier; both runs' audit logs (every cap request, every job row, every period's budget and
# measured power) are identical, so the Slurm tiers take the tiers file's path (job-average
# accounting), not a per-period floor of their own; an unknown tier (--pfi-flex=4) is no
# tier at all.
# usage: grid_slurm_tiers.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"

# the stand-in squeue --json (Slurm 22.05's shape; tests/data/slurm/squeue-22.05.json)
cat > "$WORK/squeue" <<'SQ'
#!/bin/sh
cat <<'J'
{"jobs": [
 {"job_id": 101, "job_state": "RUNNING", "nodes": "node1", "user_name": "alice",
  "tres_alloc_str": "cpu=1,gres/gpu=4", "priority": 10,
  "admin_comment": "pfi:{\"flex\":\"2\",\"class\":\"dense\"}", "comment": ""},
 {"job_id": 102, "job_state": "RUNNING", "nodes": "node1", "user_name": "bob",
  "tres_alloc_str": "cpu=1,gres/gpu=4", "priority": 10,
  "admin_comment": "", "comment": "pfi-flex=flex3"},
 {"job_id": 103, "job_state": "PENDING", "nodes": "", "user_name": "carol",
  "admin_comment": "", "comment": "pfi-flex=4"}
]}
J
SQ
chmod +x "$WORK/squeue"
printf 'job,tier\n101,Flex 2\n102,Flex 3\n' > "$WORK/tiers.csv"
printf '101 weight=2 class=dense\n102 weight=1\n' > "$WORK/policy"

# run NAME OPTIONS...: fresh agents (the emulated clock starts at 0 with them), one
# controller run on the emulated clock into $WORK/NAME.db, its stderr in $WORK/NAME.err
run() {
    run_name=$1
    shift
    cluster_cleanup
    : > "$WORK/agents"
    PFI_AGENT_EXTRA="clock = emulated" start_agent node1 tok-node1-0123456789abcdef \
        "101:dense:4:0.93:24000" "102:dense:4:0.55:9000" || return 1
    "$PFI" control --agents "$WORK/agents" --reduction 35% --start 2 --duration 4 \
        --period 0.25 --run-for 7 --clock emulated:1 --db "$WORK/$run_name.db" --quiet "$@" \
        > "$WORK/$run_name.out" 2> "$WORK/$run_name.err"
}
run slurm --slurm --squeue "$WORK/squeue" --scontrol /bin/false
check $? "pfi control --slurm (tiers from the jobs' --pfi-flex, no tiers file)"
run file --tiers "$WORK/tiers.csv" --policy "$WORK/policy"
check $? "pfi control --tiers FILE --policy FILE"

grep -q '^  101 .*Flex 2 .*allowance 25% .*within tier' "$WORK/slurm.err" &&
    grep -q '^  102 .*Flex 3 .*allowance 50% .*within tier' "$WORK/slurm.err"
check $? "--slurm: job 101 (--pfi-flex=2) accounted as Flex 2, 102 (flex3) as Flex 3, within their tiers"
! grep -q '^  103 ' "$WORK/slurm.err"
check $? "a pending job with an unknown tier (4) is not accounted"

python3 - "$WORK/slurm.db" "$WORK/file.db" <<'PY'
import sqlite3, sys
def dump(path):
    c = sqlite3.connect(path)
    return {
        "periods": c.execute("select t_s, event, budget_w, alloc_budget_w, measured_w, ref_w,"
                             " cap_sum_w, decreases, increases from ctl_periods order by id").fetchall(),
        "jobs": c.execute("select p.t_s, j.job, j.gpus, j.cap_w, j.power_w, j.tput, j.ref_tput"
                          " from ctl_jobs j join ctl_periods p on p.id = j.period"
                          " order by j.rowid").fetchall(),
        "caps": c.execute("select p.t_s, k.phase, k.uuid, k.requested_w, k.enforced_w from ctl_caps k"
                          " join ctl_periods p on p.id = k.period order by k.rowid").fetchall(),
    }
a, b = dump(sys.argv[1]), dump(sys.argv[2])
ok = True
for t in a:
    same = a[t] == b[t] and len(a[t]) > 0
    ok &= same
    print(f"  {t}: {len(a[t])} and {len(b[t])} rows{'' if same else ', DIFFERENT'}")
    if not same:
        d = next((i for i, (x, y) in enumerate(zip(a[t], b[t])) if x != y), None)
        if d is not None:
            print("   ", a[t][d], "\n   ", b[t][d])
deep = [r for r in a["caps"] if r[1] == 1]
print(f"  {len(deep)} decreases; lowest cap {min(r[3] for r in deep):.0f} W" if deep else "  no decrease")
sys.exit(0 if ok and deep else 1)
PY
check $? "the --slurm run's audit log identical to the tiers file's (caps, jobs, periods)"
# a job that leaves Slurm (job 102 gone from the 9th answer on) leaves the accounting, the
# other's goes on
cat > "$WORK/squeue2" <<SQ
#!/bin/sh
n=\$(cat "$WORK/calls" 2>/dev/null || echo 0)
echo \$((n + 1)) > "$WORK/calls"
if [ "\$n" -lt 8 ]; then exec "$WORK/squeue"; fi
echo '{"jobs": [{"job_id": 101, "job_state": "RUNNING", "nodes": "node1", "admin_comment": "pfi:{\\"flex\\":\\"2\\"}"}]}'
SQ
chmod +x "$WORK/squeue2"
run leave --slurm --squeue "$WORK/squeue2" --scontrol /bin/false
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 6 ] # (job 102's GPUs keep running on the agent: no fault of ours)
check $? "pfi control --slurm with a job leaving: ran (exit $rc)"
grep -q 'slurm: left job 102' "$WORK/leave.err" && grep -q '^  101 .*Flex 2 ' "$WORK/leave.err" &&
    ! grep -q '^  102 ' "$WORK/leave.err"
check $? "job 102 left Slurm and the accounting; 101 still accounted as Flex 2"
if [ $fail -ne 0 ]; then tail -n 12 "$WORK/slurm.err" "$WORK/file.err" "$WORK/leave.err"; fi
exit $fail
