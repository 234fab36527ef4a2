#!/bin/sh
# End-to-end: a PUT /v1/budget that changes the target starts a period at once (issue 18 item
# 7: a rack controller under a site controller acts on its new share without waiting up to a
# period for its tick), one that repeats the target in force does not, and a controller with
# ramps keeps its periods whole (on the grid of --period).
#
# A controller with a long period (8 s) over one pfid agent (2 emulated jobs, 8 GPUs) learns
# its references uncapped; right after a period is recorded a PUT sets a budget: the audit log
# must hold the event's period less than 3 s later (the next tick is ~8 s away), at a t_s off
# the grid, and the caps the agent holds must be the event's. The same budget PUT again right
# after a period starts nothing: the next period comes a whole period later. Then a controller
# with --ramp-w-per-s (period 1 s) given a budget: every period's t_s stays a whole number of
# periods. No fixed sleeps: each wait is a bounded poll on the audit log.
# usage: put_now.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"

: > "$WORK/agents"
start_agent node1 tok1 "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
TOKEN=ctl-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
(umask 077 && printf '%s\n' "$TOKEN" > "$WORK/ctl-token")

# put PORT BODY — PUT /v1/budget; prints the HTTP code
put() {
    curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X PUT \
        -H "Authorization: Bearer $TOKEN" --data-binary "$2" "http://127.0.0.1:$1/v1/budget"
}
now() { python3 -c 'import time; print(time.time())'; }
# after_next DB — a bounded poll until the audit log holds one period more than now
after_next() { an_n=$(sql "$1" "select count(*) from ctl_periods"); wait_periods "$1" $((an_n + 1)); }

# ---- a long period: the change acts at once --------------------------------------------------
P=8
"$PFI" control --agents "$WORK/agents" --listen 0 --token-file "$WORK/ctl-token" \
    --period $P --margin 0.03 --run-for 300 --db "$WORK/a.db" \
    > "$WORK/a.out" 2> "$WORK/a.err" &
CTL_PID=$!
PORT=$(wait_ctl_port "$WORK/a.err")
[ -n "$PORT" ] || { echo "FAIL: no port"; cat "$WORK/a.err"; exit 1; }
wait_periods "$WORK/a.db" 2
check $? "two uncapped periods recorded"

after_next "$WORK/a.db" # a tick has just come: the next is about P s away
t_put=$(now)
[ "$(put "$PORT" '{"budget_w": 2600}')" = 200 ]
check $? "PUT 2600 W answered 200"
wait_periods "$WORK/a.db" 1 "event = 1 and wall_s > $t_put"
check $? "an event period after the PUT"
py "$WORK/a.db" '
t_put, P = float(args[0]), float(args[1])
wall, t = c.execute("select wall_s, t_s from ctl_periods where event = 1 order by id limit 1").fetchone()
prev = c.execute("select t_s from ctl_periods where event = 0 order by id desc limit 1").fetchone()[0]
print("  PUT to its period: %.2f s; t_s %.3f (the last tick %.3f, period %g s)" % (wall - t_put, t, prev, P))
sys.exit(0 if wall - t_put < 3 and t - prev < P - 1 and abs(t / P - round(t / P)) > 1e-6 else 1)
' "$t_put" $P
check $? "the new budget's period started at once (under 3 s, off the period's grid)"
# the agent holds the caps the controller set in that period (its audit log's ctl_jobs)
url=$(awk '{print $1; exit}' "$WORK/agents")
curl -sf --max-time 5 "$url/v1/state" > "$WORK/state"
py "$WORK/a.db" '
want = dict(c.execute("select job, cap_w from ctl_jobs where period = (select min(id) from ctl_periods where event = 1)").fetchall())
caps = {}
for g in json.load(open(args[0]))["gpus"]:
    caps.setdefault(g["job"], set()).add(g["enforced_cap_w"])
print("  controller set:", want, "the agent holds:", {j: sorted(c) for j, c in caps.items()})
ok = len(want) == 2 and all(len(caps.get(j, ())) == 1 and abs(next(iter(caps[j])) - w) < 0.5 for j, w in want.items())
ok = ok and all(w < 700 for w in want.values())  # capped below the GPUs default limits
sys.exit(0 if ok else 1)
' "$WORK/state"
check $? "the agent holds the caps of the new budget"

# the same target again: no period of its own
after_next "$WORK/a.db"
t_put=$(now)
[ "$(put "$PORT" '{"budget_w": 2600}')" = 200 ]
check $? "PUT 2600 W again answered 200"
wait_periods "$WORK/a.db" 1 "wall_s > $t_put"
check $? "a period after the repeated PUT"
py "$WORK/a.db" '
r = c.execute("select wall_s from ctl_periods order by id desc limit 2").fetchall()
print("  the periods around the repeated PUT: %.2f s apart" % (r[0][0] - r[1][0]))
sys.exit(0 if r[0][0] - r[1][0] > float(args[0]) / 2 else 1)
' $P
check $? "a PUT that repeats the target starts no period"
kill -TERM "$CTL_PID" 2>/dev/null
wait "$CTL_PID" 2>/dev/null
CTL_PID=""

# ---- ramps: periods stay whole ---------------------------------------------------------------
"$PFI" control --agents "$WORK/agents" --listen 0 --token-file "$WORK/ctl-token" \
    --period 1 --margin 0.03 --run-for 120 --db "$WORK/b.db" --ramp-w-per-s 100000 \
    > "$WORK/b.out" 2> "$WORK/b.err" &
CTL_PID=$!
PORT=$(wait_ctl_port "$WORK/b.err")
[ -n "$PORT" ] || { echo "FAIL: no port"; cat "$WORK/b.err"; exit 1; }
wait_periods "$WORK/b.db" 3
after_next "$WORK/b.db"
t_put=$(now)
[ "$(put "$PORT" '{"budget_w": 2600}')" = 200 ]
check $? "ramped: PUT 2600 W answered 200"
wait_periods "$WORK/b.db" 2 "event = 1 and wall_s > $t_put"
check $? "ramped: event periods after the PUT"
py "$WORK/b.db" '
ts = [r[0] for r in c.execute("select t_s from ctl_periods order by id")]
off = [t for t in ts if abs(t - round(t)) > 1e-6]
print("  ramped: %d periods, off the grid: %s" % (len(ts), off))
sys.exit(0 if not off else 1)
'
check $? "ramped: every period on the grid (a ramp step is a whole period's)"
exit $fail
