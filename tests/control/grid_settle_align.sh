#!/bin/sh
# pfi report --settlement pairs each period with the readings that measured it. The controller
# reads the cluster at a period's tick and then sets that period's caps, so row k's power and
# tokens/s are of the time before t_k (row k - 1's caps) and the time [t_k, t_k+1) under row k's
# caps and target is measured by row k + 1. A hand-made audit log (10-s periods, --speed 1)
# whose readings differ sharply across the event's edges: row 0's reading (before the log)
# 5 000 W and 400 tokens/s, row 2 a ramp's lead (its time at lower caps: 900 W read by row 3),
# the first event row reading the uncapped pre-event time (1 000 W, 100 tokens/s), the first
# row after the event the last capped time (500 W, 40 tokens/s). Every number below is worked
# by hand in the comments; tests/golden/settlement_reference.py must agree. The old pairing
# (a row's own tokens/s for its period, the pre-event window's own-row readings, the last
# row's own reading for its period) gave a baseline of 3 000 W (the old golden script 2 333 W),
# 20 Wh shed, job a's performance 0.27 and b's 0.80, and no missing period where the log ends
# inside the event.
# usage: grid_settle_align.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
SRC=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { # STATUS WHAT
    if [ "$1" -eq 0 ]; then echo "ok   $2"; else echo "FAIL $2"; fail=1; fi
}

# rows (t_s, event, lead, budget_w, measured_w, ref_w); jobs a (2 GPUs, controller reference
# 50 tokens/s a GPU) and b (6 GPUs, 5 a GPU), their tokens/s per row
mklog() { # FILE ROWS: the first ROWS rows
    python3 - "$1" "$2" <<'PY'
import sqlite3, sys
rows = [(0, 0, 0, None, 5000, None), (10, 0, 0, None, 1000, None), (20, 0, 1, None, 1000, None),
        (30, 1, 0, 600, 900, 1100), (40, 1, 0, 600, 700, 1100), (50, 1, 0, 550, 600, 1100),
        (60, 0, 0, None, 500, None), (70, 0, 0, None, 1000, None)]
tput = {"a": [400, 100, 100, 90, 50, 60, 40, 100], "b": [30, 30, 30, 27, 30, 15, 15, 30]}
c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL, wall_s REAL,"
          " event INTEGER, budget_w REAL, alloc_budget_w REAL, measured_w REAL, reserved_w REAL,"
          " predicted_w REAL, correction_w REAL, ref_w REAL, tput_tok_s REAL, cap_sum_w REAL,"
          " strategy TEXT, note TEXT, agents_up INTEGER, agents INTEGER, bound TEXT,"
          " ramp_limited INTEGER, lead INTEGER)")
c.execute("CREATE TABLE ctl_jobs(period INTEGER, job TEXT, gpus INTEGER, ref_tput REAL, tput REAL)")
for k, (t, ev, lead, b, m, ref) in enumerate(rows[:int(sys.argv[2])]):
    pid = c.execute("INSERT INTO ctl_periods(run, t_s, wall_s, event, budget_w, measured_w,"
                    " reserved_w, ref_w, tput_tok_s, strategy, agents_up, agents, lead)"
                    " VALUES (1, ?, ?, ?, ?, ?, 0, ?, ?, 'equal', 1, 1, ?)",
                    (t, 1.7e9 + t, ev, b, m, ref, tput["a"][k] + tput["b"][k], lead)).lastrowid
    c.execute("INSERT INTO ctl_jobs VALUES (?, 'a', 2, 50, ?)", (pid, tput["a"][k]))
    c.execute("INSERT INTO ctl_jobs VALUES (?, 'b', 6, 5, ?)", (pid, tput["b"][k]))
c.commit()
PY
}
mklog "$T/full.db" 8
mklog "$T/cut.db" 6
printf 'job,tier\na,Flex 3\nb,Flex 1\n' > "$T/tiers.csv"
for log in full cut; do
    "$PFI" report --settlement --json --speed 1 --interval 300 --pre-window 1000 --skip 0 \
        --tiers "$T/tiers.csv" "$T/$log.db" > "$T/$log.json"
    check $? "pfi report --settlement ($log log)"
    /usr/bin/python3 "$SRC/tests/golden/settlement_reference.py" "$T/$log.db" 1 1000 \
        > "$T/$log.golden.json"
    check $? "the golden settlement ($log log)"
done

python3 - "$T/full.json" "$T/full.golden.json" <<'PY'
import json, math, sys
s, g = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ok = True
def want(what, got, value):
    global ok
    good = got is not None and math.isclose(got, value, rel_tol=1e-9, abs_tol=1e-12)
    if not good:
        print(f"  {what}: {got}, want {value}")
    ok &= good
# pre-event: rows 0-1's times (not row 2's: a lead), read by rows 1-2: 1 000 W each
want("pre-event baseline", s["baseline"]["pre_event_w"], 1000)
want("golden pre-event baseline", g["pre_event_w"], 1000)
# the event's times [30, 60) s, read by rows 4-6: 700, 600, 500 W against 600 W targets
# shed against the baseline: (300 + 400 + 500) W x 10 s = 12 000 J = 1/300 kWh
want("kWh shed", s["energy_shed_kwh"], 12000 / 3.6e6)
want("golden kWh shed", g["energy_shed_kwh"], 12000 / 3.6e6)
# against the uncapped predictions (1 100 W): (400 + 500 + 600) x 10 s
want("kWh shed (uncapped)", s["energy_shed_uncapped_kwh"], 15000 / 3.6e6)
want("golden kWh shed (uncapped)", g["energy_shed_uncapped_kwh"], 15000 / 3.6e6)
want("measured kWh", s["intervals"][0]["measured_kwh"], 18000 / 3.6e6)
want("golden measured kWh", g["intervals"][0]["measured_kwh"], 18000 / 3.6e6)
want("uncapped mean", s["baseline"]["uncapped_mean_w"], 1100)
# the largest excess: 700 - 600 W = 16.67 %, for the first 10 s only (then 600 W against
# 600 W, 500 W against 550 W)
want("max over target", s["max_over_target_w"], 100)
want("max over target %", s["max_over_target_pct"], 100 * 100 / 600)
want("seconds over target", s["seconds_over_target"], 10)
ok &= s["missing_periods"] == g["missing_periods"] == 0
# job a: reference 100 tokens/s (read by rows 1-2 over the pre-event times), the event's
# tokens/s 50, 60, 40 (rows 4-6): performance 150 / 300 = 0.5, tokens lost 1 500
# job b: reference 30; 30, 15, 15: 60 / 90 = 2/3, tokens lost 300
jobs, gj = {j["name"]: j for j in s["per_job"]}, g["per_job"]
for name, perf, lost in (("a", 0.5, 1500), ("b", 2 / 3, 300)):
    want(f"{name} reference", jobs[name]["reference_tput_tok_s"], 100 if name == "a" else 30)
    want(f"{name} performance", jobs[name]["performance"], perf)
    want(f"golden {name} performance", gj[name]["performance"], perf)
    want(f"{name} tokens lost", jobs[name]["tokens_lost"], lost)
    want(f"golden {name} tokens lost", gj[name]["tokens_lost"], lost)
# weighted by GPUs: (2 x 0.5 + 6 x 2/3) / 8 = 0.625; mean (0.5 + 2/3) / 2
want("weighted performance", s["weighted_performance"], 0.625)
want("mean performance", s["mean_performance"], (0.5 + 2 / 3) / 2)
# life-average, every reading of the run (row 0's too) against the controller's reference,
# capped at it, 10 s each: a (100 + 100 + 100 + 90 + 50 + 60 + 40 + 100) / 800 = 0.8 (row 0's
# 400 counts as 100; Flex 3: kept); b (30 + 30 + 30 + 27 + 30 + 15 + 15 + 30) / 240 = 0.8625
# (Flex 1 at 10 %: violated)
want("a life-average", jobs["a"]["life_performance"], 640 / 800)
want("b life-average", jobs["b"]["life_performance"], 207 / 240)
ok &= jobs["a"]["tier_compliant"] and not jobs["b"]["tier_compliant"]
ok &= s["tier_violations"] == 1
print(f"  baseline {s['baseline']['pre_event_w']:.0f} W, shed {s['energy_shed_kwh'] * 1e3:.4f} Wh, "
      f"a {jobs['a']['performance']:.4f}, b {jobs['b']['performance']:.4f}, "
      f"weighted {s['weighted_performance']:.4f}")
sys.exit(0 if ok else 1)
PY
check $? "each period paired with the next row's readings: baseline, shed, excess, performance, tokens lost, tiers as worked by hand"

python3 - "$T/cut.json" "$T/cut.golden.json" <<'PY'
import json, math, sys
s, g = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
# the log ends at the last event row (t 50 s): its time [50, 60) was never read. Missing (1),
# in no sum: shed (300 + 400) W x 10 s; a 110 / 200 = 0.55, b 45 / 60 = 0.75
ok = s["missing_periods"] == g["missing_periods"] == 1
ok &= s["intervals"][0]["missing_periods"] == g["intervals"][0]["missing_periods"] == 1
for v in (s["energy_shed_kwh"], g["energy_shed_kwh"]):
    ok &= math.isclose(v, 7000 / 3.6e6, rel_tol=1e-9)
jobs = {j["name"]: j for j in s["per_job"]}
for name, perf in (("a", 0.55), ("b", 0.75)):
    ok &= math.isclose(jobs[name]["performance"], perf, rel_tol=1e-9)
    ok &= math.isclose(g["per_job"][name]["performance"], perf, rel_tol=1e-9)
print(f"  missing {s['missing_periods']}, shed {s['energy_shed_kwh'] * 1e3:.4f} Wh, "
      f"a {jobs['a']['performance']:.4f}, b {jobs['b']['performance']:.4f}")
sys.exit(0 if ok else 1)
PY
check $? "a log ending inside the event: the last period's time unread, missing, in no sum"

# pfi report (the figure's summary) pairs them the same way: the event's tokens/s read by rows
# 4-6, (50 + 30, 60 + 15, 40 + 15) = 70 on average (the rows' own: 90.7); the largest excess
# from the event's second period: 600 - 600 W and 500 - 550 W, so 0 W (the rows' own from the
# third row: 600 - 550 = 50 W)
"$PFI" report --json "$T/full.db" > "$T/report.json"
check $? "pfi report --json"
python3 - "$T/report.json" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
ok = r["event_periods"] == 3 and math.isclose(r["mean_tput_tok_s"], 70, rel_tol=1e-12)
ok &= r["largest_excess_w"] == 0
print(f"  mean tokens/s {r['mean_tput_tok_s']}, largest excess {r['largest_excess_w']} W")
sys.exit(0 if ok else 1)
PY
check $? "pfi report: the event's tokens/s and largest excess from the readings of each period's time"
exit $fail
