#!/bin/sh
# End-to-end: pfi control --schedule with a measured power trace (timestamp,total: 45 samples
# a minute apart, a 40 % drop from minute 24 to 36) replayed at --speed 300 (a minute in
# 0.2 s) against 2 pfid agents. pfi schedule shows the derived event; from the audit log,
# period by period: the event is on exactly inside [start, end] / 300 (schedule time =
# controller time + the epoch's offset), the budget after the ramp is 60 % of the reference,
# and measured power stays within it two periods into the event. Then the CSV and JSON
# timelines give the events they say, and a bad file is refused naming its line and field.
# usage: grid_schedule.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"
PERIOD=0.25
MARGIN=0.03
SPEED=300

: > "$WORK/agents"
start_agent node1 tok1 "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
start_agent node2 tok2 "moe-b:moe-pt:4:0.8:16000" || exit 1

python3 - "$WORK/trace.csv" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("timestamp,total\n")
    for i in range(45):
        p = 100000 if i < 25 else 95000 if i == 25 else 80000 if i == 26 else 60000 if i <= 36 else 100000
        f.write(f"2025-05-04 {14 + (40 + i) // 60:02d}:{(40 + i) % 60:02d}:00-07:00,{p}\n")
PY
"$PFI" schedule --format json --speed $SPEED "$WORK/trace.csv" > "$WORK/sched.json"
check $? "pfi schedule reads the trace"
python3 - "$WORK/sched.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["events"][0]
ok = (d["form"] == "trace" and len(d["events"]) == 1 and abs(e["start_s"] - 24 * 60 / 300) < 1e-9
      and abs(e["end_s"] - 36 * 60 / 300) < 1e-9 and abs(e["ramp_s"] - 3 * 60 / 300) < 1e-9
      and abs(e["reduction_pct"] - 40) < 1e-9 and e["budget_w"] is None
      and abs(d["trace"]["pre_event_w"] - 100000) < 1e-6)
sys.exit(0 if ok else 1)
PY
check $? "the trace's event: minutes 24-36, ramp 3 min, 40 % (by hand), / 300"

EPOCH=$(python3 -c 'import time; print(f"{time.time() - 0.5:.3f}")')
"$PFI" control --agents "$WORK/agents" --schedule "$WORK/trace.csv" --speed $SPEED \
    --epoch "$EPOCH" --period $PERIOD --margin $MARGIN --run-for 8.5 --db "$WORK/g.db" \
    > "$WORK/ctl.out" 2> "$WORK/ctl.err" &
CTL_PID=$!
wait $CTL_PID
check $? "pfi control --schedule TRACE --speed $SPEED ran"
CTL_PID=""

py "$WORK/g.db" '
epoch, period, margin = float(args[0]), float(args[1]), float(args[2])
start, end, ramp, red = 24 * 60 / 300, 36 * 60 / 300, 3 * 60 / 300, 0.4
rows = c.execute("select t_s, wall_s, event, budget_w, measured_w, ref_w from ctl_periods "
                 "order by id").fetchall()
offset = min(w - t for t, w, *_ in rows) - epoch
bad, inside = 0, 0
for k, (t, w, ev, b, m, ref) in enumerate(rows):
    ts = t + offset
    if abs(ts - start) < 0.15 or abs(ts - end) < 0.15 or abs(ts + period - end) < 0.15:
        continue
    on = start <= ts < end
    if on != bool(ev):
        bad += 1; print(f"  t_sched {ts:.2f}: event {ev}, scheduled {on}"); continue
    if not on:
        continue
    inside += 1
    # the caps hold until the next tick: inside the event, the lower target of this tick and the next
    kk = min(1.0, ((ts + period if ts + period < end else ts) - start) / ramp)
    want = (1 - kk * red) * ref
    if b is None or abs(b - want) > 0.02 * ref:
        bad += 1; print(f"  t_sched {ts:.2f}: budget {b}, want {want:.0f}")
    if ts - start > ramp + 2 * period + 0.15 and m > b * (1 + margin):
        bad += 1; print(f"  t_sched {ts:.2f}: measured {m:.0f} > budget {b:.0f}")
print(f"  {len(rows)} periods, {inside} inside the event")
sys.exit(1 if bad or inside < 5 else 0)' "$EPOCH" "$PERIOD" "$MARGIN"
check $? "audit: the trace's event replayed at speed $SPEED, budget and power as derived"
agents_restored
check $? "every GPU back on its original limit after the event"

printf 'start_s,end_s,ramp_s,budget_w,reduction_pct\n0,600,60,,25\n700,900,0,52000,\n' > "$WORK/t.csv"
"$PFI" schedule --speed 60 "$WORK/t.csv" > "$WORK/t.out"
check $? "pfi schedule reads a CSV timeline"
grep -Eq '^ +0\.000 +10\.000 +1\.000  25\.00%$' "$WORK/t.out" &&
    grep -Eq '^ +11\.667 +15\.000 +0\.000  52000W$' "$WORK/t.out"
check $? "CSV timeline / 60: 0-10 s 25 % ramp 1 s; 11.667-15 s 52000 W"
printf '{"events": [{"start_s": 5, "end_s": 9, "target": "30%%"}]}' > "$WORK/t.json"
"$PFI" schedule --format json "$WORK/t.json" | grep -q '"reduction_pct": 30}'
check $? "pfi schedule reads a JSON timeline"
printf 'start_s,end_s,budget_w\n0,10,5\n4,x,5\n' > "$WORK/bad.csv"
"$PFI" schedule "$WORK/bad.csv" > /dev/null 2> "$WORK/bad.err"
[ $? -eq 1 ] && grep -q 'bad.csv:3' "$WORK/bad.err" && grep -q 'end_s' "$WORK/bad.err"
check $? "a bad timeline: exit 1, file:line and the field named"
"$PFI" control --agents "$WORK/agents" --schedule "$WORK/t.csv" --speed 0 > /dev/null 2>&1
[ $? -eq 2 ]
check $? "--speed 0 is a usage error"

if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    echo "--- controller output"; cat "$WORK/ctl.out"; echo "--- stderr"; cat "$WORK/ctl.err"
    cat "$WORK/bad.err" 2>/dev/null
fi
exit $fail
