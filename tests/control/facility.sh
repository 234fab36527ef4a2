#!/bin/sh
# End-to-end: pfi control --facility-limit-w against 2 pfid agents (3 emulated jobs, 12 GPUs,
# about 7 850 W uncapped). A 4 500 W event ends under a 6 000 W facility limit: after it the
# caps go up only as far as the limit allows — the curves' prediction at the confirmed caps
# never above the limit, measured power (audit log and the agents' own readings) within it,
# the held-back increases reported — but they do go up (power above the event's budget).
# A second controller with a limit above the cluster's draw then puts every GPU back on its
# original limit.
# usage: facility.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"
PERIOD=0.5
MARGIN=0.03
LIMIT=6000
BUDGET=4500
END=4.0

: > "$WORK/agents"
start_agent node1 tok1 "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
start_agent node2 tok2 "moe-b:moe-pt:4:0.8:16000" || exit 1

"$PFI" control --agents "$WORK/agents" --budget-w $BUDGET --start 1.0 --duration 3.0 \
    --facility-limit-w $LIMIT --keep-caps-on-exit --period $PERIOD --margin $MARGIN --run-for 9 \
    --db "$WORK/fac.db" > "$WORK/ctl.out" 2> "$WORK/ctl.err" &
CTL_PID=$!
wait $CTL_PID
check $? "pfi control --facility-limit-w ran"
CTL_PID=""

py "$WORK/fac.db" '
limit, budget, end, period, margin = (float(a) for a in args)
rows = c.execute("select t_s, event, budget_w, measured_w, predicted_w, restored, note "
                 "from ctl_periods order by id").fetchall()
bad = 0
ev = [r for r in rows if r[1]]
post = [r for r in rows if not r[1] and r[0] >= end]
if not ev or len(post) < 6:
    print("  event periods", len(ev), "after it", len(post)); sys.exit(1)
for t, e, b, m, p, restored, note in post:
    if p > limit * (1 - margin) + 1:
        bad += 1; print(f"  t {t:.1f}: predicted {p:.0f} W > facility limit {limit:.0f}")
    if t >= end + 2 * period and m > limit:
        bad += 1; print(f"  t {t:.1f}: measured {m:.0f} W > facility limit {limit:.0f}")
    if restored:
        bad += 1; print(f"  t {t:.1f}: every GPU restored although the cluster draws more than the limit")
held = sum("held back by the facility limit" in (r[6] or "") for r in post)
last = post[-1]
print(f"  after the event: {len(post)} periods, {held} with increases held back; "
      f"last measured {last[3]:.0f} W, predicted {last[4]:.0f} W, limit {limit:.0f} W")
if held == 0:
    bad += 1; print("  no increase held back")
if not last[3] > budget * 1.1:
    bad += 1; print("  the caps did not go up after the event")
sys.exit(1 if bad else 0)' "$LIMIT" "$BUDGET" "$END" "$PERIOD" "$MARGIN"
check $? "audit: after the event, increases staged under the facility limit"

# the agents' own view: their GPUs draw within the limit and some are still held down
view=$(while read -r url tok; do curl -sf --max-time 5 "$url/v1/state"; echo; done < "$WORK/agents")
printf '%s\n' "$view" | python3 -c 'import json, sys
limit = float(sys.argv[1])
p, low = 0.0, 0
for line in sys.stdin:
    if line.strip():
        for g in json.loads(line)["gpus"]:
            p += g["power_w"] or 0
            low += g["enforced_cap_w"] < g["original_cap_w"] - 0.5
print(f"  agents: {p:.0f} W, {low} GPUs below their original limit")
sys.exit(0 if p <= limit and low > 0 else 1)' "$LIMIT"
check $? "agents: within the facility limit, some GPUs still held down"

# a limit above the cluster's draw: everything goes back
"$PFI" control --agents "$WORK/agents" --budget-w $BUDGET --start 1000 \
    --facility-limit-w 20000 --period $PERIOD --margin $MARGIN --run-for 2 \
    --db "$WORK/fac2.db" >> "$WORK/ctl.out" 2>> "$WORK/ctl.err"
check $? "second controller ran"
agents_restored
check $? "a facility limit above the draw: every GPU back on its original limit"

if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    echo "--- controller output"; cat "$WORK/ctl.out"; echo "--- stderr"; cat "$WORK/ctl.err"
fi
exit $fail
