#!/bin/sh
# End-to-end: priority bands under the site budget alone (no --topology, no ramp; issue 18
# item 4). One emulated pfid agent, three alike jobs of 2 GPUs (dense, alpha 0.93) in bands
# 2, 1 and 0 (--policy), a 2 600 W budget from t = 1 s: the lowest band is cut to its lowest
# cap, the highest keeps its top, the middle one takes the cut in between — with the oracle
# and with the equal strategy (within a band by the strategy). Without bands the three
# alike jobs would get one cap. Checked on the audit log, every event period from the third.
# Every wait is a bounded poll. usage: bands.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"

start_agent node1 tok1 "hi:dense:2:0.93:24000" "mid:dense:2:0.93:24000" "lo:dense:2:0.93:24000" || exit 1
printf 'hi band=2\nmid band=1\nlo band=0\n' > "$WORK/policy"
# the agent's power settled before the controller learns its references
wait_power_settled "$WORK/agents"
check $? "the agent's power settled before the controller starts"
# each job's lowest and top caps, from the agent
job_cap_bounds "$WORK/agents" > "$WORK/bounds"

for st in oracle equal; do
    "$PFI" control --agents "$WORK/agents" --policy "$WORK/policy" --strategy $st \
        --budget-w 2600 --start 1 --duration 30 --period 0.5 --run-for 5 --db "$WORK/$st.db" \
        > "$WORK/$st.out" 2> "$WORK/$st.err"
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 6 ]
    check $? "pfi control --strategy $st with bands ran (exit $rc)"
    py "$WORK/$st.db" '
lim = json.load(open(args[0]))
lo, top = lim["lo"], lim["top"]
rows = c.execute("select id from ctl_periods where event = 1 order by id").fetchall()[2:]
bad = 0
seen = set()
for (pid,) in rows:
    cap = {j: cw for j, cw in c.execute("select job, cap_w from ctl_jobs where period = ?", (pid,))}
    seen.add(tuple(round(cap[j]) for j in ("hi", "mid", "lo")))
    ok = (cap["lo"] <= lo["lo"] + 1 and cap["hi"] >= top["hi"] - 1
          and lo["mid"] + 5 < cap["mid"] < top["mid"] - 5)
    if not ok:
        bad += 1
        if bad <= 3:
            print(f"  period {pid}: caps {cap}")
print(f"  {args[1]}: {len(rows)} event periods from the third, {bad} out of band order; caps (hi, mid, lo) W per GPU: {sorted(seen)}")
sys.exit(1 if bad or len(rows) < 4 else 0)' "$WORK/bounds" $st
    check $? "$st: band 0 at its lowest cap, band 2 at its top, band 1 cut in between, every event period"
done
if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    for f in "$WORK"/*.out "$WORK"/*.err; do echo "--- $f"; cat "$f"; done
fi
exit $fail
