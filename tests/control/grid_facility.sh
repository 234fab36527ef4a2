#!/bin/sh
# End-to-end: targets on facility power (pfi control --non-gpu-w) against 2 pfid agents (3
# emulated jobs, 12 GPUs, about 7 850 W uncapped). With 400 W of non-GPU power a node (800 W
# for the two), a 6 000 W facility budget leaves the GPUs 5 200 W and a 30 % facility
# reduction (1 − 0.3)(ref + 800) − 800: from the audit log, the GPU budget is that, and the
# GPUs' measured power stays within it two periods into the event.
# usage: grid_facility.sh PFI PFID SOURCE_DIR
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

for target in "--budget-w 6000" "--reduction 30%"; do
    name=$(echo "$target" | tr -dc 'a-z0-9')
    # shellcheck disable=SC2086
    "$PFI" control --agents "$WORK/agents" $target --start 1.0 --duration 3.0 --non-gpu-w 400 \
        --period $PERIOD --margin $MARGIN --run-for 5 --db "$WORK/$name.db" \
        > "$WORK/$name.out" 2> "$WORK/$name.err" &
    CTL_PID=$!
    wait $CTL_PID
    check $? "pfi control $target --non-gpu-w 400 ran"
    CTL_PID=""
    grep -q 'facility power: 2 nodes x 400 W non-GPU = 800 W' "$WORK/$name.err"
    check $? "$target: the controller says what comes off"
    py "$WORK/$name.db" '
kind, margin, period = args[0], float(args[1]), float(args[2])
rows = c.execute("select t_s, event, budget_w, measured_w, ref_w from ctl_periods "
                 "where event = 1 order by id").fetchall()
bad = 0
prev_ref = None
for t, ev, b, m, ref in rows:
    r0 = prev_ref if prev_ref is not None else ref
    want = 5200 if kind == "budget" else 0.7 * (r0 + 800) - 800
    if b is None or abs(b - want) > (1 if kind == "budget" else 0.01 * want):
        bad += 1; print(f"  t {t:.2f}: GPU budget {b}, want {want:.0f}")
    if t > 1.0 + 2 * period + 0.1 and m > b * (1 + margin):
        bad += 1; print(f"  t {t:.2f}: measured {m:.0f} > {b:.0f}")
    prev_ref = ref
print(f"  {len(rows)} event periods")
sys.exit(1 if bad or len(rows) < 4 else 0)' "$(echo "$target" | sed 's/--\([a-z]*\).*/\1/' | sed 's/-w//')" $MARGIN $PERIOD
    check $? "$target: GPU budget = facility target less 800 W, power within it"
done
"$PFI" control --agents "$WORK/agents" --budget-w 6000 --non-gpu-w -1 >/dev/null 2>&1
[ $? -eq 2 ]
check $? "--non-gpu-w -1 is a usage error"
if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    for f in "$WORK"/*.out "$WORK"/*.err; do echo "--- $f"; cat "$f"; done
fi
exit $fail
