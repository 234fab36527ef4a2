#!/bin/sh
# End-to-end: pfi control --policy (SLA floors, weights, class override). Three identical
# emulated clusters (2 pfid agents each: dense-a and moe-a on one node, moe-b on the other;
# same names, same seeds) run the same 4 500 W event at once, one controller each:
#   A  no policy;
#   B  "moe-b floor=0.9": moe-b keeps at least 90 % of its reference tokens/s (measured, 5 %
#      tolerance for the curve's error) where A cut it well below, on a higher cap than A's;
#   C  "moe-a weight=4" and "moe-b class=moe-ft": moe-a gets a higher cap, more power and
#      more tokens/s than in A; moe-b is treated as moe-ft (class and prior PFI 2.10 in the
#      audit log).
# Each stays within the budget two periods into the event.
# usage: policy.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"
PERIOD=0.5
MARGIN=0.03
BUDGET=4500
START=1.5
TOP=$WORK

for r in A B C; do
    WORK=$TOP/$r
    mkdir -p "$WORK"
    : > "$WORK/agents"
    start_agent node1 tok1 "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
    start_agent node2 tok2 "moe-b:moe-pt:4:0.8:16000" || exit 1
done
WORK=$TOP
printf '# JOB key=value ...\nmoe-b floor=0.9\n' > "$TOP/B/policy"
printf 'moe-a weight=4\nmoe-b class=moe-ft\n* weight=1\n' > "$TOP/C/policy"
pids=""
for r in A B C; do
    pol=""
    [ -f "$TOP/$r/policy" ] && pol="--policy $TOP/$r/policy"
    # shellcheck disable=SC2086
    "$PFI" control --agents "$TOP/$r/agents" --budget-w $BUDGET --start $START \
        --period $PERIOD --margin $MARGIN --run-for 5 --db "$TOP/$r/ctl.db" $pol \
        > "$TOP/$r/ctl.out" 2> "$TOP/$r/ctl.err" &
    pids="$pids $!"
done
CTL_PID=$pids
for p in $pids; do
    wait "$p"
    check $? "controller $p ran"
done
CTL_PID=""

# per run and job: cap, power, tokens/s, reference tokens/s, class and PFI, averaged over the
# event periods from two periods after its start
py "$TOP/A/ctl.db" '
period, margin, budget, start = (float(a) for a in args[:4])
top = args[4]
res = {}
bad = 0
for r in "ABC":
    c = sqlite3.connect(f"{top}/{r}/ctl.db")
    t0 = c.execute("select min(t_s) from ctl_periods where event = 1").fetchone()[0]
    if t0 is None:
        print(f"  {r}: no event"); sys.exit(1)
    worst = c.execute("select max(measured_w / budget_w) from ctl_periods where event = 1 "
                      "and t_s >= ?", (t0 + 2 * period,)).fetchone()[0]
    print(f"  {r}: worst measured / budget {worst:.3f}")
    if not worst or worst > 1 + margin:
        bad += 1; print(f"  {r}: over the budget")
    res[r] = {}
    for job, cap, pw, tp, rt, cls, pfi in c.execute(
            "select job, avg(cap_w), avg(power_w), avg(tput), avg(j.ref_tput * j.gpus), "
            "max(class), max(pfi) from ctl_jobs j join ctl_periods p on p.id = j.period "
            "where p.event = 1 and p.t_s >= ? group by job", (t0 + 2 * period,)):
        res[r][job] = (cap, pw, tp, rt, cls, pfi)
        print(f"  {r} {job:8s} cap {cap:5.0f} W  power {pw:6.0f} W  tokens/s {tp:7.0f} "
              f"= {tp / rt:.3f} of reference  class {cls} pfi {pfi}")
A, B, C = res["A"], res["B"], res["C"]
# B: the floor
fl = 0.9
if not (A["moe-b"][2] < 0.8 * A["moe-b"][3]):
    bad += 1; print("  A does not cut moe-b below its floor: the floor test proves nothing")
if not (B["moe-b"][2] >= 0.95 * fl * B["moe-b"][3]):
    bad += 1; print("  B: moe-b under its floor")
if not (B["moe-b"][0] > A["moe-b"][0] + 50):
    bad += 1; print("  B: moe-b cap not raised by its floor")
# B: every period (not only on average) keeps moe-b at its floor
cb = sqlite3.connect(f"{top}/B/ctl.db")
t0 = cb.execute("select min(t_s) from ctl_periods where event = 1").fetchone()[0]
low = cb.execute("select count(*) from ctl_jobs j join ctl_periods p on p.id = j.period "
                 "where p.event = 1 and p.t_s >= ? and j.job = ? and j.tput < ? * j.ref_tput * j.gpus",
                 (t0 + 2 * period, "moe-b", 0.95 * fl)).fetchone()[0]
if low:
    bad += 1; print(f"  B: moe-b under its floor in {low} periods")
# C: the weight shifts power to moe-a; the class override
if not (C["moe-a"][0] > A["moe-a"][0] + 50 and C["moe-a"][1] > A["moe-a"][1] * 1.2 and
        C["moe-a"][2] > A["moe-a"][2] * 1.1):
    bad += 1; print("  C: weight 4 did not shift power to moe-a")
if not (C["moe-b"][4] == "moe-ft" and abs(C["moe-b"][5] - 2.10) < 1e-9 and A["moe-b"][4] == "moe-pt"):
    bad += 1; print("  C: class override not applied to moe-b")
sys.exit(1 if bad else 0)' "$PERIOD" "$MARGIN" "$BUDGET" "$START" "$TOP"
check $? "floors hold, weights shift power, class overrides apply; all within the budget"

if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    for r in A B C; do
        echo "--- $r"; cat "$TOP/$r/ctl.out" "$TOP/$r/ctl.err"
    done
fi
exit $fail
