#!/bin/sh
# Telemetry that lies (issue 16): the controller reads Prometheus through a proxy that
# freezes every answer for 16 periods (8 s) mid-event (frozen samples, old timestamps) and
# then sends one counter glitch (an energy counter x1000: an impossible rate). The controller must say so
# (stderr, /metrics pfi_ctl_prometheus_stale_gpus, exit 6), fall back to the agents, keep the
# power (the agents' own readings, sampled every 0.2 s once the caps are in force) within
# 1.05 x budget, keep the feedback
# correction far from its 10 % ceiling, and put every GPU back on its original limit.
# usage: prom_faults.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"
command -v prometheus >/dev/null 2>&1 || { echo "SKIP: prometheus not installed"; exit 77; }
PERIOD=0.5
BUDGET=5500
: > "$WORK/agents"
start_agent node1 tok1 "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
start_agent node2 tok2 "moe-b:moe-pt:4:0.8:16000" || exit 1
start_prometheus || exit 1
echo pass > "$WORK/mode"
python3 "$SRC/tests/control/prom_proxy.py" "$PROM_URL" "$WORK/proxy.port" "$WORK/mode" &
PROXY_PID=$!
CTL_PID="$PROXY_PID"
n=0
until [ -s "$WORK/proxy.port" ] || [ $n -gt 100 ]; do n=$((n + 1)); sleep 0.05; done
PROXY="http://127.0.0.1:$(cat "$WORK/proxy.port")"

wait_for() {
    wf_n=0
    until "$@"; do
        wf_n=$((wf_n + 1))
        [ $wf_n -gt 300 ] && return 1
        sleep 0.1
    done
}
metric() { curl -sf "http://127.0.0.1:$PORT/metrics" | sed -n "s/^$1 //p"; }

"$PFI" control --agents "$WORK/agents" --prometheus "$PROXY" --budget-w $BUDGET \
    --period $PERIOD --run-for 40 --listen 0 --db "$WORK/ctl.db" \
    > "$WORK/ctl.out" 2> "$WORK/ctl.err" &
CTL_PID="$PROXY_PID $!"
CPID=$!
PORT=$(wait_ctl_port "$WORK/ctl.err")
# the event settles on Prometheus' readings first
wait_for sh -c "[ \"\$(python3 -c \"import sqlite3; print(sqlite3.connect('$WORK/ctl.db').execute(\\\"select count(*) from ctl_periods where telemetry = 'prometheus'\\\").fetchone()[0])\" 2>/dev/null)\" -ge 8 ]"
check $? "the controller reads Prometheus through the proxy"
# the agents' own readings, every 0.2 s from here on (the caps are in force): the truth the
# budget is checked against, whatever the controller was told
start_truth_sampler "$WORK/agents" "$WORK/truth"
CTL_PID="$CTL_PID $TRUTH_PID"
# ---- freeze for 16 periods (8 s at least; counted in the audit log, not slept)
n_freeze=$(sql "$WORK/ctl.db" "select count(*) from ctl_periods")
echo freeze > "$WORK/mode"
wait_for sh -c "[ \"\$(curl -sf http://127.0.0.1:$PORT/metrics | sed -n 's/^pfi_ctl_prometheus_stale_gpus //p')\" -gt 0 ] 2>/dev/null"
check $? "frozen Prometheus: pfi_ctl_prometheus_stale_gpus > 0 in /metrics"
wait_periods "$WORK/ctl.db" $((n_freeze + 16))
check $? "16 periods under the frozen Prometheus"
echo pass > "$WORK/mode"
wait_for sh -c "[ \"\$(curl -sf http://127.0.0.1:$PORT/metrics | sed -n 's/^pfi_ctl_prometheus_stale_gpus //p')\" = 0 ]"
check $? "Prometheus fresh again: stale GPUs back to 0"
# ---- one counter glitch
echo glitch > "$WORK/mode"
wait_for sh -c "[ \"\$(cat $WORK/mode)\" = pass ]"
check $? "the proxy sent the glitch"
wait_for grep -q "impossible readings rejected" "$WORK/ctl.err"
check $? "the glitch is rejected, said on stderr"
# four periods after the glitch
n_glitch=$(sql "$WORK/ctl.db" "select count(*) from ctl_periods")
wait_periods "$WORK/ctl.db" $((n_glitch + 4))
check $? "four periods after the glitch"
kill $TRUTH_PID
wait $TRUTH_PID 2>/dev/null
kill -INT $CPID
wait $CPID
rc=$?
[ $rc -eq 6 ]
check $? "exit 6 (ran degraded), got $rc"
grep -q "Prometheus stale on [0-9]* GPU(s)" "$WORK/ctl.err"
check $? "stderr: Prometheus stale, one line a period ($(grep -c 'Prometheus stale' "$WORK/ctl.err") lines)"
py "$WORK/ctl.db" '
b = float(args[0])
first = c.execute("select min(period) from ctl_caps where phase = 1 and what = ?", ("confirmed",)).fetchone()[0]
rows = c.execute("select measured_w + coalesce(reserved_w, 0), correction_w, t_s, telemetry from ctl_periods where event = 1 and id > ? + 1", (first,)).fetchall()
for m, x, t, tel in rows:
    if m > 1.05 * b:
        print(f"  over: t={t:.2f} measured {m:.0f} ({tel})")
worst = max(r[0] for r in rows) / b
corr = max(abs(r[1] or 0) for r in rows) / b
print(f"  {len(rows)} periods from the second after the first confirmed decrease: worst measured / budget {worst:.3f}, largest |correction| {100 * corr:.1f} % of the budget")
sys.exit(0 if rows and corr < 0.05 else 1)' $BUDGET
check $? "the controller's own view: correction under 5 % of the budget (ceiling 10 %)"
python3 - "$WORK/truth" $BUDGET <<'PY'
import sys
v = [float(l.split()[1]) for l in open(sys.argv[1]) if len(l.split()) == 2]
b = float(sys.argv[2])
print(f"  agents' power: {len(v)} samples through the freeze and the glitch, worst {max(v):.0f} W = {max(v) / b:.3f} x budget")
sys.exit(0 if len(v) > 25 and max(v) <= 1.05 * b else 1)
PY
check $? "the agents' measured power stays within 1.05 x budget through the freeze and the glitch"
agents_restored
check $? "every GPU back on its original limit"
[ $fail -ne 0 ] && { tail -30 "$WORK/ctl.err"; tail -15 "$WORK/ctl.out"; }
exit $fail
