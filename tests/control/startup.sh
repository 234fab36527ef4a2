#!/bin/sh
# A controller started with its agents, while their jobs' power may still rise (about 2 kW at
# the first reading, 5 kW a few seconds later), under a 4 000 W budget from t = 0: never
# silent. Every period from the event's third on (pfi report's excess counts from there)
# with measured power more than 1 % over the budget, the third in a row, carries a fault in
# the audit log's faults column, and then stderr says "over the budget" and the exit is 5
# (else 0). (References learnt from a rising power are not yet learnt again: the overshoot is
# reported, not corrected; docs/commands/pfi-control.md, Ramps.)
# usage: startup.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"
: > "$WORK/agents"
start_agent node1 tok1 "a1:dense:4:0.93:24000" || exit 1
start_agent node2 tok2 "b1:moe-ft:4:0.55:9000" || exit 1
"$PFI" control --agents "$WORK/agents" --budget-w 4000 --period 0.5 --run-for 8 \
    --db "$WORK/s.db" > "$WORK/ctl.out" 2> "$WORK/ctl.err"
rc=$?
py "$WORK/s.db" '
rows = c.execute("select t_s, measured_w + coalesce(reserved_w, 0), faults from ctl_periods order by id").fetchall()
run, bad, any_over = 0, 0, 0
for k, (t, m, f) in enumerate(rows):
    run = run + 1 if k >= 2 and m > 1.01 * 4000 else 0
    if run >= 3:
        any_over = 1
        if not f or "over the budget" not in f:
            bad += 1; print(f"  t={t}: {m:.0f} W over 4000 W, faults {f!r}")
sys.exit(bad + 2 * any_over if bad else (10 if any_over else 0))'
r=$?
if [ $r -eq 10 ]; then
    [ $rc -eq 5 ] && grep -q "over the budget" "$WORK/ctl.err"
    check $? "over the budget three periods in a row: a fault line and exit 5 (got $rc)"
else
    [ $r -eq 0 ] && [ $rc -eq 0 ]
    check $? "no period over the budget unsaid (faults column), exit 0 when none (got $rc)"
fi
exit $fail
