#!/bin/sh
# End-to-end: pfi control --schedule against 2 pfid agents (3 emulated jobs, 12 GPUs). The
# schedule holds three events — a budget in watts, a ramped reduction, a ramped budget — and
# counts from an --epoch one second before the controller starts. From the audit log, period
# by period: the event is on exactly inside the scheduled windows (schedule time = controller
# time + the epoch's offset), the budget is the scheduled one (ramps included: a reduction
# ramps from 0, a budget from the reference power; inside an event the lower of the targets at
# the tick and the next: the caps hold for the period), measured power stays within the budget
# two periods into each event, and between events every GPU goes back to its original limit.
# The agents hold their original limits when it is over.
# usage: schedule.sh PFI PFID SOURCE_DIR
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

# boundaries fall between periods (ticks land near whole and half seconds of schedule time)
cat > "$WORK/schedule" <<'EOF'
# START END TARGET [RAMP], seconds since --epoch
2.8 5.3 5000W
6.3 9.3 30% 1.5
10.3 12.3 4200W 1
EOF
EPOCH=$(python3 -c 'import time; print(f"{time.time() - 1.0:.3f}")')
"$PFI" control --agents "$WORK/agents" --schedule "$WORK/schedule" --epoch "$EPOCH" \
    --period $PERIOD --margin $MARGIN --run-for 12.5 --db "$WORK/sched.db" \
    > "$WORK/ctl.out" 2> "$WORK/ctl.err" &
CTL_PID=$!
wait $CTL_PID
check $? "pfi control --schedule ran"
CTL_PID=""

py "$WORK/sched.db" '
epoch, period, margin = float(args[0]), float(args[1]), float(args[2])
events = []
for l in open(args[3]):
    f = l.split("#")[0].split()
    if f:
        events.append((float(f[0]), float(f[1]), f[2], float(f[3]) if len(f) > 3 else 0.0))
rows = c.execute("select t_s, wall_s, event, budget_w, measured_w, ref_w, restored "
                 "from ctl_periods order by id").fetchall()
# schedule time of a period: its controller time plus the start offset (start wall - epoch),
# estimated from the earliest-written period (written a few ms after its tick)
offset = min(w - t for t, w, *_ in rows) - epoch
print(f"  {len(rows)} periods, schedule offset {offset:.3f} s")
bad, seen = 0, set()
def event_at(ts):
    for i, e in enumerate(events):
        if e[0] <= ts < e[1]:
            return i
    return None
for k, (t, w, ev, b, m, ref, restored) in enumerate(rows):
    ts = t + offset
    if any(abs(ts - x) < 0.15 for e in events for x in e[:2]) or any(
            abs(ts + period - e[1]) < 0.15 for e in events):
        continue  # too close to a boundary to tell
    i = event_at(ts)
    if (i is not None) != bool(ev):
        bad += 1; print(f"  t_sched {ts:.2f}: event {ev}, scheduled {i is not None}"); continue
    if i is None:
        after = [e for e in events if e[1] <= ts]
        if after and ts - after[-1][1] > 2 * period + 0.15 and not restored:
            bad += 1; print(f"  t_sched {ts:.2f}: between events and not restored")
        continue
    seen.add(i)
    start, end, target, ramp = events[i]
    # the caps hold until the next tick: inside the event, the lower target of this tick and the next
    kk = min(1.0, ((ts + period if ts + period < end else ts) - start) / ramp) if ramp > 0 else 1.0
    prev = rows[k - 1]
    if target.endswith("%"):
        red = kk * float(target[:-1]) / 100
        want, tol = (1 - red) * ref, 0.02 * ref
    else:
        tw = float(target[:-1])
        r0 = prev[5]  # the ramp starts from the reference of the period before
        want = r0 + kk * (tw - r0) if r0 > tw else tw
        tol = 1 if kk >= 1 else 0.06 * (r0 - tw) + 1
    if b is None or abs(b - want) > tol:
        bad += 1; print(f"  t_sched {ts:.2f}: budget {b}, want {want:.0f} +- {tol:.0f}")
    if ts - start > 2 * period + 0.15 and prev[2]:
        lim = max(b, prev[3] or b) * (1 + margin)
        if m > lim:
            bad += 1; print(f"  t_sched {ts:.2f}: measured {m:.0f} > {lim:.0f}")
if seen != set(range(len(events))):
    bad += 1; print("  events never in force:", set(range(len(events))) - seen)
sys.exit(1 if bad else 0)' "$EPOCH" "$PERIOD" "$MARGIN" "$WORK/schedule"
check $? "audit: events, budgets and ramps as scheduled, power within them, restored between"

n=$(sql "$WORK/sched.db" "select count(distinct budget_w) from ctl_periods where event = 1")
[ "${n:-0}" -ge 6 ]
check $? "the ramps moved the budget through several values ($n)"
agents_restored
check $? "every GPU back on its original limit after the schedule"

if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    echo "--- controller output"; cat "$WORK/ctl.out"; echo "--- stderr"; cat "$WORK/ctl.err"
fi
exit $fail
