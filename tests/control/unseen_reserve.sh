#!/bin/sh
# End-to-end: the power reserved for a silent agent that has never answered is unknown (its
# GPUs are), never 0 W. One pfid agent (2 jobs of 2 emulated GPUs) and one URL nobody
# answers, a 900 W budget, 0.5 s periods: every period's table row shows '-' under reserved,
# the audit log's reserved_w is NULL, pfi control status says "unknown reserved" and --json
# "reserved_w": null, GET /metrics has no pfi_ctl_reserved_watts value; the live agent's caps
# still come down (the allocation goes on with what is known). Then the silent URL alone: the
# same, with measured '-' too.
# usage: unseen_reserve.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"

: > "$WORK/agents"
start_agent node1 tok1 "dense-a:dense:2:0.93:24000" "moe-a:moe-ft:2:0.55:9000" || exit 1
wait_power_settled "$WORK/agents"
check $? "the emulated jobs' power settled"
DEAD=http://127.0.0.1:$(free_port)
cp "$WORK/agents" "$WORK/live"
echo "$DEAD tok-dead" >> "$WORK/agents"
printf '%s tok-dead\n' "$DEAD" > "$WORK/dead"
chmod 600 "$WORK/agents" "$WORK/dead"

"$PFI" control --agents "$WORK/agents" --budget-w 900 --period 0.5 --listen 0 --run-for 60 \
    --db "$WORK/audit.db" > "$WORK/ctl.out" 2> "$WORK/ctl.err" &
CTL_PID=$!
PORT=$(wait_ctl_port "$WORK/ctl.err")
[ -n "$PORT" ] || { echo "FAIL: the controller did not listen"; cat "$WORK/ctl.err"; exit 1; }
wait_periods "$WORK/audit.db" 4
check $? "four periods with one agent silent since the start"
curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" > "$WORK/metrics"
grep -q '^# TYPE pfi_ctl_reserved_watts gauge' "$WORK/metrics" &&
    ! grep -q '^pfi_ctl_reserved_watts ' "$WORK/metrics"
check $? "GET /metrics: pfi_ctl_reserved_watts without a value ($(grep '^pfi_ctl_reserved_watts' "$WORK/metrics"))"
kill -TERM $CTL_PID
wait $CTL_PID
CTL_PID=""

# the table: the reserved column (5th) of every period row is '-'
awk '$1 ~ /^[0-9.]+$/ { n++; if ($5 != "-") bad++ } END { print "  " n " period rows, " bad + 0 " with a reserved value"; exit !(n >= 4 && bad == 0) }' \
    "$WORK/ctl.out"
check $? "every period row: reserved '-'"
[ "$(sql "$WORK/audit.db" "select count(*) from ctl_periods where reserved_w is not null")" = 0 ]
check $? "the audit log's reserved_w is NULL in every period"
[ "$(sql "$WORK/audit.db" "select count(*) from ctl_jobs where cap_state = 'confirmed' and cap_w < 699.5")" -ge 2 ]
check $? "the live agent's caps came down all the same"
"$PFI" control status --db "$WORK/audit.db" > "$WORK/status" 2>&1
grep -q '^measured .*(+ unknown reserved for silent agents)' "$WORK/status"
check $? "pfi control status: $(grep '^measured' "$WORK/status")"
"$PFI" control status --db "$WORK/audit.db" --json > "$WORK/status.json" 2>&1
python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); sys.exit(0 if "reserved_w" in o and o["reserved_w"] is None else 1)' \
    "$WORK/status.json"
check $? "pfi control status --json: reserved_w null"

# the silent URL alone: nothing measured, nothing known to reserve
"$PFI" control --agents "$WORK/dead" --budget-w 900 --period 0.5 --run-for 1.2 \
    --db "$WORK/dead.db" > "$WORK/dead.out" 2> "$WORK/dead.err"
[ $? -eq 6 ]
check $? "a controller whose only agent never answers: exit 6 (ran degraded)"
awk '$1 ~ /^[0-9.]+$/ { n++; if ($4 != "-" || $5 != "-") bad++ } END { exit !(n >= 2 && bad == 0) }' \
    "$WORK/dead.out"
check $? "its rows: measured and reserved '-'"
"$PFI" control status --db "$WORK/dead.db" --json > "$WORK/dead.json" 2>&1
python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); sys.exit(0 if o["reserved_w"] is None and o["measured_w"] is None else 1)' \
    "$WORK/dead.json"
check $? "its status --json: measured_w and reserved_w null"
exit $fail
