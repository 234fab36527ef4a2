#!/bin/sh
# End-to-end: `pfi control` as a service — started with --config (pfid.conf's syntax, keys
# the long options) against 2 emulated pfid agents (3 jobs, 12 GPUs). --check passes on the
# config and fails (exit 2) on a bad one, on an agents file with tokens readable by others
# and on a short agent token; the budget changed in the config and a SIGHUP puts the new budget in force from a
# later period (polled in the audit log, said on stderr and in the audit note); a config that
# no longer parses is refused on SIGHUP, loudly, and the running budget kept; the command line
# overrides the config.
# usage: reload.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"

: > "$WORK/agents"
start_agent node1 tok1-0123456789abcdef "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
start_agent node2 tok2-0123456789abcdef "moe-b:moe-pt:4:0.8:16000" || exit 1

# conf BUDGET — the service's config file with that budget
conf() {
    cat > "$WORK/ctl.conf" <<EOF2
# pfi control, as the service runs it
agents = $WORK/agents
budget_w = $1       # W, the cluster's GPU budget
period = 0.5
margin = 0.03
db = $WORK/ctl.db
run_for = 90
EOF2
}
conf 5500
"$PFI" control --config "$WORK/ctl.conf" --check > "$WORK/check.out" 2>&1
check $? "--check on the service's config: valid ($(cat "$WORK/check.out"))"
grep -q 'configuration valid: 2 agent(s), target budget 5500 W' "$WORK/check.out"
check $? "--check says what it found"
chmod 644 "$WORK/agents"
"$PFI" control --config "$WORK/ctl.conf" --check > "$WORK/check.out" 2>&1
[ $? -eq 2 ] && grep -q 'readable by others' "$WORK/check.out" && ! grep -q 'warning' "$WORK/check.out"
check $? "--check: agents file with tokens readable by others: exit 2, an error (not a warning)"
chmod 600 "$WORK/agents"
cp "$WORK/agents" "$WORK/agents.good"
sed 's/ tok1-[0-9a-f]*$/ tok1/' "$WORK/agents.good" > "$WORK/agents"
"$PFI" control --config "$WORK/ctl.conf" --check > "$WORK/check.out" 2>&1
[ $? -eq 2 ] && grep -q 'is short (4 bytes, under 16)' "$WORK/check.out"
check $? "--check: an agent token under 16 bytes: exit 2"
cp "$WORK/agents.good" "$WORK/agents"
"$PFI" control --config "$WORK/ctl.conf" --check --budget-w abc > "$WORK/check.out" 2>&1
[ $? -eq 2 ] && grep -q "control: --budget-w: bad value 'abc'" "$WORK/check.out"
check $? "--check with a bad command-line value: exit 2 ($(cat "$WORK/check.out"))"
"$PFI" control --agents "$WORK/agents" --budget-w 5000 --reduction 30% --check > "$WORK/check.out" 2>&1
[ $? -eq 2 ] && grep -q "give one target: --budget-w and --reduction both given" "$WORK/check.out"
check $? "--check with two targets: exit 2, says which ($(cat "$WORK/check.out"))"
"$PFI" control --agents "$WORK/agents" --budget-w 100 --schedule "$WORK/none" --check > "$WORK/check.out" 2>&1
[ $? -eq 2 ] && grep -q "give one target: --budget-w and --schedule both given" "$WORK/check.out"
check $? "--check with --budget-w and --schedule: exit 2, says which ($(cat "$WORK/check.out"))"
sed 's/^run_for = 90$/reduction = 10%/' "$WORK/ctl.conf" > "$WORK/two.conf"
"$PFI" control --config "$WORK/two.conf" --check > "$WORK/check.out" 2>&1
[ $? -eq 2 ] && grep -q "give one target: --budget-w and --reduction both given" "$WORK/check.out"
check $? "--check on a config with budget_w and reduction: exit 2, says which ($(cat "$WORK/check.out"))"
[ ! -e "$WORK/ctl.db" ]
check $? "--check writes no audit log"
: > "$WORK/empty"
"$PFI" report "$WORK/empty" --json > "$WORK/rep.out" 2>&1
[ $? -ne 0 ] && grep -q "audit log: $WORK/empty: not a pfi control audit log" "$WORK/rep.out"
check $? "pfi report on an empty file names it ($(cat "$WORK/rep.out"))"
"$PFI" report "$WORK/empty" > "$WORK/rep.out" 2>&1
[ $? -eq 2 ] && grep -q "report: -o FIGURE (or --json) is required" "$WORK/rep.out"
check $? "pfi report LOG without -o: says only -o is missing ($(cat "$WORK/rep.out"))"
"$PFI" report --json > "$WORK/rep.out" 2>&1
[ $? -eq 2 ] && grep -q "report: an audit log is required" "$WORK/rep.out"
check $? "pfi report --json without a log: says only the log is missing ($(cat "$WORK/rep.out"))"

"$PFI" control --config "$WORK/ctl.conf" > "$WORK/ctl.out" 2> "$WORK/ctl.err" &
CTL_PID=$!

# poll_budget WANT — until the audit log's last period has budget WANT (bounded: 150 polls)
poll_budget() {
    pb_n=0
    while :; do
        got=$(sql "$WORK/ctl.db" "select budget_w from ctl_periods order by id desc limit 1" 2>/dev/null)
        python3 -c "import sys; sys.exit(0 if '$got' and abs(float('$got') - $1) < 0.5 else 1)" && return 0
        kill -0 $CTL_PID 2>/dev/null || { echo "  the controller exited"; return 1; }
        pb_n=$((pb_n + 1))
        [ $pb_n -gt 150 ] && { echo "  last budget: '$got'"; return 1; }
        sleep 0.1
    done
}
# poll_err PATTERN — until the controller's stderr holds PATTERN (bounded: 30 s)
poll_err() {
    pe_n=0
    while ! grep -q -- "$1" "$WORK/ctl.err"; do
        kill -0 $CTL_PID 2>/dev/null || { echo "  the controller exited"; return 1; }
        pe_n=$((pe_n + 1))
        [ $pe_n -gt 300 ] && return 1
        sleep 0.1
    done
}
periods() { sql "$WORK/ctl.db" "select count(*) from ctl_periods" 2>/dev/null; }

poll_budget 5500
check $? "the config's budget (5500 W) is in force"

conf 4500
kill -HUP $CTL_PID
poll_err 'config reloaded: target budget 4500 W'
check $? "SIGHUP: the reload is said on stderr"
poll_budget 4500
check $? "SIGHUP: the new budget (4500 W) is in force"
n=$(sql "$WORK/ctl.db" "select count(*) from ctl_periods where note like 'config reloaded: budget 4500 W%'")
[ "$n" = 1 ]
check $? "the audit log notes the reload in the period it took effect ($n)"
first=$(sql "$WORK/ctl.db" "select min(id) from ctl_periods where budget_w = 4500")
noted=$(sql "$WORK/ctl.db" "select id from ctl_periods where note like 'config reloaded%'")
[ "$first" = "$noted" ]
check $? "the noted period is the first with the new budget ($noted, $first)"

# a bad config: refused, the running one kept
printf 'agents = %s\nbudget_w = -3\nperiod = 0.5\n' "$WORK/agents" > "$WORK/ctl.conf"
kill -HUP $CTL_PID
poll_err 'reload REFUSED'
check $? "SIGHUP with a bad config: refused loudly"
kill -0 $CTL_PID 2>/dev/null || { echo "--- controller stderr"; cat "$WORK/ctl.err"; exit 1; }
grep -q 'ctl.conf:2: budget_w: bad value' "$WORK/ctl.err"
check $? "the refusal names the file, line and key"
before=$(periods)
pn=0
while [ "$(periods)" -lt $((before + 3)) ] && [ $pn -lt 300 ]; do pn=$((pn + 1)); sleep 0.1; done
n=$(sql "$WORK/ctl.db" "select count(*) from ctl_periods where id > (select id from ctl_periods where note like 'config reload refused%') and abs(budget_w - 4500) < 0.5")
[ "${n:-0}" -ge 2 ]
check $? "after the refused reload the budget stays 4500 W ($n periods)"
"$PFI" control --config "$WORK/ctl.conf" --check > "$WORK/check.out" 2>&1
[ $? -eq 2 ]
check $? "--check on the bad config: exit 2"

kill -TERM $CTL_PID
wait $CTL_PID
rc=$?
CTL_PID=""
[ $rc -eq 0 ] || [ $rc -eq 5 ] || [ $rc -eq 6 ]
check $? "controller stopped on SIGTERM (exit $rc)"
agents_restored
check $? "every GPU back on its original limit"

# the command line overrides the config: --budget-w over budget_w
conf 5500
"$PFI" control --config "$WORK/ctl.conf" --budget-w 5000 --run-for 1.6 --db "$WORK/cl.db" \
    > "$WORK/cl.out" 2>&1
got=$(sql "$WORK/cl.db" "select budget_w from ctl_periods order by id desc limit 1")
[ "${got%.*}" = 5000 ]
check $? "--budget-w on the command line overrides the config's budget_w ($got)"

# wait_db DB — until the controller has written a period there (its SIGHUP handler is in)
wait_db() {
    wd_n=0
    while [ -z "$(sql "$1" "select id from ctl_periods limit 1" 2>/dev/null)" ]; do
        wd_n=$((wd_n + 1))
        [ $wd_n -gt 300 ] && return 1
        sleep 0.1
    done
}

# and says so on SIGHUP, when the file's target is not the one taken
"$PFI" control --config "$WORK/ctl.conf" --budget-w 5000 --run-for 30 --db "$WORK/cl2.db" \
    > "$WORK/cl2.out" 2> "$WORK/ctl.err" &
CTL_PID=$!
wait_db "$WORK/cl2.db"
conf 4000
kill -HUP $CTL_PID
poll_err "the command line's target (budget 5000 W) overrides the target in $WORK/ctl.conf"
check $? "SIGHUP: the command line's --budget-w over the file's new budget_w is said"
kill -TERM $CTL_PID
wait $CTL_PID
CTL_PID=""

# a bad schedule on SIGHUP: refused as a bad schedule (stderr names the file, the note says so)
echo "0 100 5000W" > "$WORK/sched"
"$PFI" control --agents "$WORK/agents" --schedule "$WORK/sched" --period 0.5 --run-for 30 \
    --db "$WORK/sc.db" > "$WORK/sc.out" 2> "$WORK/ctl.err" &
CTL_PID=$!
wait_db "$WORK/sc.db"
printf 'garbage\n' > "$WORK/sched"
kill -HUP $CTL_PID
poll_err 'reload REFUSED'
check $? "SIGHUP with a bad schedule: refused loudly"
pn=0
while [ -z "$(sql "$WORK/sc.db" "select id from ctl_periods where note like 'config reload refused (bad schedule)%'" 2>/dev/null)" ] && [ $pn -lt 300 ]; do pn=$((pn + 1)); sleep 0.1; done
[ $pn -lt 300 ]
check $? "the audit note says bad schedule, not bad config"
kill -TERM $CTL_PID
wait $CTL_PID
CTL_PID=""

[ $fail -eq 0 ] || { echo "--- controller stderr"; cat "$WORK/ctl.err"; }
exit $fail
