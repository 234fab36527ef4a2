#!/bin/sh
# End-to-end: pfi control --store (measured sweeps as the jobs' curves). Two run stores are
# made with `pfi sweep` on the emulated backend, each holding a sweep of group "moe-b": in
# one the job barely slows down when capped (flexible, compute share 0.3), in the other it
# slows down in proportion (compute share 1). Two identical emulated clusters (2 pfid agents:
# dense-a and moe-a on one node, moe-b on the other) run the same 6 500 W event at once, one
# controller on each store. From the audit logs:
#   - moe-b's curve comes from the store, the other jobs' from the class prior;
#   - at every cap the controller chose, its predicted power for moe-b is the store's sweep
#     (joined between the stored caps as the controller does: Steffen, 4 points a segment)
#     scaled to moe-b's live reference power;
#   - the measured curve decides the allocation: moe-b gives up more power when its sweep
#     says it is flexible than when it says it is not;
#   - both stay within the budget two periods into the event.
# usage: store.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"
PERIOD=0.5
MARGIN=0.03
BUDGET=6500
TOP=$WORK

for s in flex:0.3 rigid:1; do
    name=${s%%:*} alpha=${s#*:}
    "$PFI" sweep --backend emulated --emulate "gpus=4,alpha=$alpha,startup=0,ckpt=0,spread=0,seed=3" \
        --caps 700,600,500,400,300,200 --duration 5m --interval 5s --warmup 1m --group moe-b \
        --db "$TOP/$name.store" > "$TOP/$name.sweep" 2>&1
    check $? "pfi sweep into the $name store"
done

for r in flex rigid; do
    WORK=$TOP/$r
    mkdir -p "$WORK"
    : > "$WORK/agents"
    start_agent node1 tok1 "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
    start_agent node2 tok2 "moe-b:moe-pt:4:0.8:16000" || exit 1
done
WORK=$TOP
pids=""
for r in flex rigid; do
    "$PFI" control --agents "$TOP/$r/agents" --budget-w $BUDGET --start 1.5 --store "$TOP/$r.store" \
        --period $PERIOD --margin $MARGIN --run-for 5 --db "$TOP/$r/ctl.db" \
        > "$TOP/$r/ctl.out" 2> "$TOP/$r/ctl.err" &
    pids="$pids $!"
done
CTL_PID=$pids
for p in $pids; do
    wait "$p"
    check $? "controller $p ran"
done
CTL_PID=""

py "$TOP/flex/ctl.db" '
period, margin = float(args[0]), float(args[1])
top = args[2]
bad = 0
res = {}
for r in ("flex", "rigid"):
    s = sqlite3.connect(f"{top}/{r}.store")
    pts = s.execute("select r.cap_w, r.power_w, r.throughput from runs r join groups g "
                    "on g.id = r.group_id where g.name = ? and r.power_w > 0 and "
                    "r.throughput > 0 and (r.flags & 1) = 0 order by r.cap_w", ("moe-b",)).fetchall()
    caps = [p[0] for p in pts]
    pw = [p[1] for p in pts]
    def lin(xs, ys, x):
        x = min(max(x, xs[0]), xs[-1])
        for k in range(1, len(xs)):
            if x <= xs[k]:
                f = (x - xs[k - 1]) / (xs[k] - xs[k - 1])
                return ys[k - 1] + f * (ys[k] - ys[k - 1])
        return ys[-1]
    # the controller joins the stored points smoothly: the monotone cubic of Steffen (as GSL
    # gsl_interp_steffen: one-sided end slopes), resampled on 4 points a segment
    def steffen(xs, ys):
        n = len(xs)
        h = [xs[i + 1] - xs[i] for i in range(n - 1)]
        sl = [(ys[i + 1] - ys[i]) / h[i] for i in range(n - 1)]
        yp = [sl[0]] + [0.0] * (n - 2) + [sl[-1]]
        for i in range(1, n - 1):
            p = (sl[i - 1] * h[i] + sl[i] * h[i - 1]) / (h[i - 1] + h[i])
            sg = (1.0 if sl[i - 1] >= 0 else -1.0) + (1.0 if sl[i] >= 0 else -1.0)
            yp[i] = sg * min(abs(sl[i - 1]), abs(sl[i]), 0.5 * abs(p))
        def f(x):
            i = max(k for k in range(n - 1) if xs[k] <= x) if x > xs[0] else 0
            a = (yp[i] + yp[i + 1] - 2 * sl[i]) / h[i] ** 2
            b = (3 * sl[i] - 2 * yp[i] - yp[i + 1]) / h[i]
            d = x - xs[i]
            return ys[i] + d * (yp[i] + d * (b + d * a))
        m = min(4 * (n - 1) + 1, 64)
        rx = [xs[0] + (xs[-1] - xs[0]) * k / (m - 1) for k in range(m)]
        rx[-1] = xs[-1]
        ry = [f(x) for x in rx]
        for k in range(1, m):
            ry[k] = max(ry[k], ry[k - 1])
        return rx, ry
    sx, sy = steffen(caps, pw)
    def interp(x):
        return lin(sx, sy, x)
    c = sqlite3.connect(f"{top}/{r}/ctl.db")
    src = dict(c.execute("select job, group_concat(distinct source) from ctl_jobs group by job").fetchall())
    print(f"  {r}: curve sources {src}; stored moe-b sweep at caps {caps}")
    if src != {"dense-a": "prior", "moe-a": "prior", "moe-b": "store"}:
        bad += 1; print("  wrong curve sources")
    if c.execute("select count(*) from ctl_jobs where job = ? and pfi is not null", ("moe-b",)).fetchone()[0]:
        bad += 1; print("  a PFI recorded for a measured curve")
    rows = c.execute("select j.cap_w, j.pred_power_w, j.ref_power_w * j.gpus from ctl_jobs j "
                     "join ctl_periods p on p.id = j.period where p.event = 1 and j.job = ?",
                     ("moe-b",)).fetchall()
    worst = 0.0
    for cap, pred, ref in rows:
        want = ref * interp(cap) / pw[-1]
        worst = max(worst, abs(pred - want))
    print(f"  {r}: {len(rows)} event periods, predicted power vs the stored sweep: "
          f"largest difference {worst:.3f} W")
    if not rows or worst > 0.5:
        bad += 1; print("  the predicted power is not the stored curve")
    t0 = c.execute("select min(t_s) from ctl_periods where event = 1").fetchone()[0]
    w = c.execute("select max(measured_w / budget_w) from ctl_periods where event = 1 and t_s >= ?",
                  (t0 + 2 * period,)).fetchone()[0]
    print(f"  {r}: worst measured / budget {w:.3f}")
    if not w or w > 1 + margin:
        bad += 1; print("  over the budget")
    res[r] = c.execute("select avg(j.cap_w), avg(j.power_w) from ctl_jobs j join ctl_periods p "
                       "on p.id = j.period where p.event = 1 and p.t_s >= ? and j.job = ?",
                       (t0 + 2 * period, "moe-b")).fetchone()
    print(f"  {r}: moe-b settled at cap {res[r][0]:.0f} W, {res[r][1]:.0f} W")
if not (res["flex"][0] < res["rigid"][0] - 25 and res["flex"][1] < res["rigid"][1] - 100):
    bad += 1; print("  the measured curve did not change the allocation")
sys.exit(1 if bad else 0)' "$PERIOD" "$MARGIN" "$TOP"
check $? "moe-b on its stored curve: predictions are the sweep, the allocation follows it"

if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    for r in flex rigid; do
        echo "--- $r"; cat "$TOP/$r/ctl.out" "$TOP/$r/ctl.err"
    done
fi
exit $fail
