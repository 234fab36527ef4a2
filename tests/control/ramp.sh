#!/bin/sh
# End-to-end: pfi control with ramp limits (--ramp-w-per-s, a rack's ramp= in --topology)
# against 4 pfid agents (16 GPUs, about 10 kW uncapped).
#   1. A 6 000 W event from t = 6 s, the site ramp 1 000 W/s: the controller falls ahead of
#      the event (said on stderr) so that measured power is under the budget from the event's
#      start on, and no measured step between periods is faster than the ramp (10 % and 1 W
#      over it allowed: the curves' error), after the agents' first two periods (the jobs
#      start with them); after the event the power comes back up no faster either.
#   1b. The lead periods are no event: stored event 0 and lead 1, printed "lead"; pfi report
#      --settlement settles 6-11 s and pfi report --json counts 10 event periods.
#   2. pfi report --json: the power-swing figures equal NumPy's (tests/golden/
#      swing_reference.py) on the audit log's series.
#   3. A 5 000 W event at t = 2 s with a 200 W/s ramp cannot be met: stderr says so and the
#      controller exits 5 (the budget could not be met), still falling no faster than 200 W/s.
#   4. An event ramped into over 4 s (the schedule's RAMP, no site ramp): its budget falls
#      ~10 % a period inside the event while each period's readings were measured under the
#      last period's caps; they are judged against the budget in force then, so the fall is
#      no "over the budget" fault (judged against the new budget it was one: exit 5).
# usage: ramp.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"
PERIOD=0.5

: > "$WORK/agents"
start_agent node1 tok1 "a1:dense:4:0.93:24000" || exit 1
start_agent node2 tok2 "b1:moe-ft:4:0.55:9000" || exit 1
start_agent node3 tok3 "c1:moe-pt:4:0.8:16000" || exit 1
start_agent node4 tok4 "d1:dense:4:0.9:20000" || exit 1
cat > "$WORK/topo" <<T
feed feed - 12000 measured
rack r1 feed 5000 ramp=1500
node node1 r1 -
node node2 r1 -
rack r2 feed -
node node3 r2 -
node node4 r2 -
T

# The jobs start with their agents and their power rises for a while: a controller started
# then learns references (and curves) from a rising power, and its first ramp steps follow
# curves whose knee is misplaced. Wait (a bounded poll) until the agents' summed power has
# settled: three readings 0.3 s apart within 1 % of each other.
wait_power_settled "$WORK/agents"
check $? "the agents' power settled before the controller starts"

# steps DB RATE FROM_T [UNTIL_T] — 0 when every measured step between periods from FROM_T
# (until UNTIL_T) is within RATE (W/s) x period x 1.1 + 1 W; prints the fastest.
steps() {
    py "$1" '
rate, t0, t1, period = (float(a) for a in args)
rows = c.execute("select t_s, measured_w from ctl_periods order by id").fetchall()
worst, bad = 0.0, 0
for (ta, a), (tb, b) in zip(rows, rows[1:]):
    if ta < t0 or tb > t1:
        continue
    r = abs(b - a) / (tb - ta)
    worst = max(worst, r)
    if abs(b - a) > rate * (tb - ta) * 1.1 + 1:
        bad += 1; print(f"  t {ta:.1f}-{tb:.1f}: {a:.0f} -> {b:.0f} W: {r:.0f} W/s > {rate:.0f}")
print(f"  fastest measured step {worst:.0f} W/s (ramp {rate:.0f} W/s)")
sys.exit(1 if bad else 0)' "$2" "$3" "${4:-1e9}" "$PERIOD"
}

# ---- 1. an event met on time, ramped ----------------------------------------------------
echo "6 11 6000W" > "$WORK/sched"
"$PFI" control --agents "$WORK/agents" --topology "$WORK/topo" --schedule "$WORK/sched" \
    --ramp-w-per-s 1000 --period $PERIOD --run-for 15 --db "$WORK/r.db" --strategy oracle \
    > "$WORK/ctl.out" 2> "$WORK/ctl.err"
rc=$?; [ $rc -eq 0 ] || cat "$WORK/ctl.err"; [ $rc -eq 0 ]
check $? "pfi control --ramp-w-per-s 1000: exit 0"
grep -q "ramping ahead of the schedule" "$WORK/ctl.err"
check $? "stderr: ramping ahead of the schedule"
py "$WORK/r.db" '
rows = c.execute("select t_s, measured_w from ctl_periods where t_s >= 6 and t_s < 11").fetchall()
bad = [(t, m) for t, m in rows if m > 6000]
print(f"  event periods {len(rows)}, worst measured {max(m for t, m in rows):.0f} W of 6000")
sys.exit(1 if bad or not rows else 0)'
check $? "measured power under the budget from the event's start"
steps "$WORK/r.db" 1000 1.0
check $? "no measured step faster than the 1 000 W/s ramp (falling before and rising after)"

# ---- 1b. the lead is no event: audit, settlement and report say 6-11 s ----------------
py "$WORK/r.db" '
lead = c.execute("select min(t_s), max(t_s), count(*), sum(event) from ctl_periods where lead = 1").fetchone()
ev = c.execute("select min(t_s), max(t_s), count(*) from ctl_periods where event = 1").fetchone()
print(f"  lead periods {lead[2]} ({lead[0]}-{lead[1]} s, event {lead[3]}), event periods {ev[2]} ({ev[0]}-{ev[1]} s)")
sys.exit(0 if lead[2] > 0 and lead[3] == 0 and lead[1] < 6 and ev[0] == 6.0 and ev[1] == 10.5 and ev[2] == 10 else 1)'
check $? "the audit log: the ramp's lead periods lead=1 event=0, the event 6-10.5 s"
grep -q "^ *[0-9.]*  *lead " "$WORK/ctl.out"
check $? "stdout's event column says lead ahead of the event"
"$PFI" report --settlement "$WORK/r.db" > "$WORK/settle.txt"
grep -q "event 6-11 s" "$WORK/settle.txt"
check $? "pfi report --settlement: $(head -1 "$WORK/settle.txt")"
"$PFI" report "$WORK/r.db" --json | grep -q '"event_periods":10,'
check $? "pfi report --json: event_periods 10 (the lead not counted)"

# ---- 2. the report's swing figures against NumPy -----------------------------------------
"$PFI" report "$WORK/r.db" --json > "$WORK/rep.json"
check $? "pfi report --json"
sql "$WORK/r.db" "select group_concat(t_s || ' ' || (measured_w + coalesce(reserved_w, 0)), char(10)) from (select * from ctl_periods where run = (select max(run) from ctl_periods) order by id)" |
    /usr/bin/python3 "$SRC/tests/golden/swing_reference.py" > "$WORK/ref.json"
/usr/bin/python3 - "$WORK/rep.json" "$WORK/ref.json" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))["swing"]
ref = json.load(open(sys.argv[2]))
bad = 0
for k in ("max_ramp_w_per_s", "dynamic_range_w", "period_s", "osc_energy_w2"):
    g, r = got[k], ref[k]
    ok = (g is None and r is None) or (g is not None and r is not None and abs(g - r) <= 1e-9 * max(1, abs(r)))
    print(f"  {k}: pfi {g}, numpy {r}" + ("" if ok else "  DIFFERENT"))
    bad += not ok
sys.exit(1 if bad else 0)
PY
check $? "pfi report --json: max ramp, dynamic range, 0.1-20 Hz energy equal NumPy's to 1e-9"
"$PFI" report "$WORK/r.db" -o "$WORK/r.png" > "$WORK/rep.txt"
grep -q "power swings: max ramp [0-9.]* W/s, dynamic range [0-9]* W" "$WORK/rep.txt"
check $? "pfi report's table: $(grep 'power swings' "$WORK/rep.txt")"
# a replay's log (issue 18 item 2): --speed N gives the swings in event time, the log's
# seconds x N; NumPy's reference on the times x 4 (a ramp a quarter, a period 4 x as long,
# the band to the new Nyquist frequency, 0.25 Hz at 2 s)
"$PFI" report "$WORK/r.db" --json --speed 4 > "$WORK/rep4.json"
check $? "pfi report --json --speed 4"
sql "$WORK/r.db" "select group_concat((4 * t_s) || ' ' || (measured_w + coalesce(reserved_w, 0)), char(10)) from (select * from ctl_periods where run = (select max(run) from ctl_periods) order by id)" |
    /usr/bin/python3 "$SRC/tests/golden/swing_reference.py" > "$WORK/ref4.json"
/usr/bin/python3 - "$WORK/rep4.json" "$WORK/ref4.json" "$WORK/rep.json" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))["swing"]
ref = json.load(open(sys.argv[2]))
one = json.load(open(sys.argv[3]))["swing"]
bad = 0 if got["speed"] == 4 and one["speed"] == 1 else 1
for k in ("max_ramp_w_per_s", "dynamic_range_w", "period_s", "osc_energy_w2"):
    g, r = got[k], ref[k]
    ok = (g is None and r is None) or (g is not None and r is not None and abs(g - r) <= 1e-9 * max(1, abs(r)))
    print(f"  --speed 4 {k}: pfi {g}, numpy {r}" + ("" if ok else "  DIFFERENT"))
    bad += not ok
# by hand from the log-time figures: a quarter of the ramp, four times the period
bad += abs(got["max_ramp_w_per_s"] - one["max_ramp_w_per_s"] / 4) > 1e-9 * one["max_ramp_w_per_s"]
bad += abs(got["period_s"] - 4 * one["period_s"]) > 1e-12
sys.exit(1 if bad else 0)
PY
check $? "pfi report --speed 4: the swings in event time equal NumPy's on the times x 4"
"$PFI" report "$WORK/r.db" -o "$WORK/r240.png" --speed 240 > "$WORK/rep240.txt"
grep -q "power swings in event time (the log's seconds x 240, a replay): max ramp [0-9.]* W/s, .*, 0.1-20 Hz oscillation undefined (sampled below 0.2 Hz) over [0-9]* periods of [0-9.]* s$" "$WORK/rep240.txt"
check $? "pfi report --speed 240 says event time and no 0.1-20 Hz figure at 120 s periods (0.5 s x 240): $(grep 'power swings' "$WORK/rep240.txt")"
"$PFI" report "$WORK/r.db" --json --speed 0 > /dev/null 2>&1
check $(( $? == 2 ? 0 : 1 )) "pfi report --speed 0: a usage error (exit 2)"

# ---- 3. a budget the ramp cannot reach in time ------------------------------------------
echo "2 8 5000W" > "$WORK/sched2"
"$PFI" control --agents "$WORK/agents" --topology "$WORK/topo" --schedule "$WORK/sched2" \
    --ramp-w-per-s 200 --period $PERIOD --run-for 6 --db "$WORK/r2.db" --strategy oracle \
    > "$WORK/ctl2.out" 2> "$WORK/ctl2.err"
rc=$?
[ $rc -eq 5 ]
check $? "a budget the 200 W/s ramp cannot reach in time: exit 5 (got $rc)"
grep -q "t=2.00 ramp: the budget 5000 W cannot be met falling at the ramps'" "$WORK/ctl2.err"
check $? "stderr says the ramp cannot meet it: $(grep -m1 'cannot be met' "$WORK/ctl2.err")"
grep -q "budget not reached yet: the ramps allow [0-9]* W/s down" "$WORK/ctl2.err" &&
    ! grep -q "budget infeasible" "$WORK/ctl2.err"
check $? "the fault line names the ramp, not infeasibility: $(grep -m1 'not reached yet\|infeasible' "$WORK/ctl2.err")"
steps "$WORK/r2.db" 200 1.0
check $? "still no measured step faster than 200 W/s"

# ---- 4. a ramp inside the event is no overshoot -----------------------------------------
echo "1 9 5000W 4" > "$WORK/sched3"
"$PFI" control --agents "$WORK/agents" --schedule "$WORK/sched3" --period $PERIOD --run-for 8 \
    --db "$WORK/r3.db" --strategy oracle > "$WORK/ctl3.out" 2> "$WORK/ctl3.err"
rc=$?
[ $rc -eq 0 ] || cat "$WORK/ctl3.err"
[ $rc -eq 0 ] && ! grep -q "over the budget" "$WORK/ctl3.err"
check $? "an event ramped over 4 s: exit 0 (got $rc), no 'over the budget' fault"
py "$WORK/r3.db" '
rows = c.execute("select budget_w, measured_w + coalesce(reserved_w, 0) from ctl_periods where event = 1 order by id").fetchall()
falls = sum(1 for (a, _), (b, _) in zip(rows, rows[1:]) if b < 0.97 * a)
over_new = sum(1 for (b, m), (b2, m2) in zip(rows, rows[1:]) if m2 > 1.01 * b2)
over_held = sum(1 for (b, m), (b2, m2) in zip(rows, rows[1:]) if m2 > 1.01 * b)
print(f"  event periods {len(rows)}: budget falls > 3 % {falls}, readings > 1.01 x the new budget {over_new}, > 1.01 x the budget in force {over_held}")
sys.exit(0 if falls >= 4 and over_new >= 3 and over_held == 0 else 1)'
check $? "the ramp fell in steps; readings over the new budget, never over the one in force"
exit $fail
