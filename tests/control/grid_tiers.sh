#!/bin/sh
# End-to-end: pfi control --tiers (flexibility tiers with job-average accounting) against 2
# pfid agents (3 emulated jobs, 12 GPUs) through a deep cut (45 % for 4 s after 2 s at full
# power). Run once without tiers and once with dense-a in Flex 1 (may lose 10 % of its
# life-average tokens/s), moe-b in Flex 2 (25 %), moe-a in Flex 3 (50 %). From the audit log,
# computed here independently (Σ (ref − tput) dt ÷ Σ ref dt per job over the periods the job
# has a reference): with
# tiers every job's life-average performance is within its tier and the controller's summary
# agrees; without, the Flex 1 job loses more than its 10 % (so the tiers did something).
# usage: grid_tiers.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"
PERIOD=0.25

: > "$WORK/agents"
start_agent node1 tok1 "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
start_agent node2 tok2 "moe-b:moe-pt:4:0.8:16000" || exit 1
printf 'job,tier\ndense-a,Flex 1\nmoe-b,Flex 2\nmoe-a,Flex 3\n' > "$WORK/tiers.csv"

perf() { # perf DB: "job performance" lines, life-average over the run's periods
    py "$1" '
# the audit log keeps the reference per GPU (ref_tput) and the measured job tokens/s (tput)
rows = c.execute("select p.t_s, j.job, j.ref_tput * j.gpus, j.tput from ctl_jobs j "
                 "join ctl_periods p on p.id = j.period order by p.id").fetchall()
period = float(args[0])
lost, ref = {}, {}
for t, job, r, tp in rows:
    if r is None or tp is None or r <= 0:
        continue
    lost[job] = lost.get(job, 0) + (r - min(tp, r)) * period
    ref[job] = ref.get(job, 0) + r * period
for job in sorted(ref):
    print(job, 1 - lost[job] / ref[job])' "$PERIOD"
}

for mode in plain tiers; do
    extra=""
    [ $mode = tiers ] && extra="--tiers $WORK/tiers.csv"
    # shellcheck disable=SC2086
    "$PFI" control --agents "$WORK/agents" --reduction 45% --start 2 --duration 4 \
        --period $PERIOD --run-for 6 --db "$WORK/$mode.db" $extra \
        > "$WORK/$mode.out" 2> "$WORK/$mode.err" &
    CTL_PID=$!
    wait $CTL_PID
    check $? "pfi control $mode ran"
    CTL_PID=""
    perf "$WORK/$mode.db" > "$WORK/$mode.perf"
    echo "  $mode: $(tr '\n' ' ' < "$WORK/$mode.perf")"
done
awk 'BEGIN { a["dense-a"] = 0.10; a["moe-b"] = 0.25; a["moe-a"] = 0.50 }
     { n++; if ($2 < 1 - a[$1] - 0.01) { print "  " $1 " below its tier: " $2; bad = 1 } }
     END { exit bad || n != 3 }' "$WORK/tiers.perf"
check $? "with tiers: every job's life-average performance within its tier (by the audit log)"
awk '$1 == "dense-a" { exit !($2 < 0.9) }' "$WORK/plain.perf"
check $? "without tiers: dense-a loses more than Flex 1's 10 %"
grep -q 'dense-a .*Flex 1 .*within tier' "$WORK/tiers.err" &&
    ! grep -q 'TIER VIOLATED' "$WORK/tiers.err"
check $? "the controller's tier summary: within tier"
printf 'job,tier\ndense-a,Flex 4\n' > "$WORK/bad.csv"
"$PFI" control --agents "$WORK/agents" --reduction 30% --tiers "$WORK/bad.csv" --run-for 1 \
    > /dev/null 2> "$WORK/bad.err"
[ $? -eq 1 ] && grep -q 'bad.csv:2' "$WORK/bad.err" && grep -q 'Flex 4' "$WORK/bad.err"
check $? "a bad tier: exit 1, file:line and the value named"
if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    for f in "$WORK"/*.out "$WORK"/*.err; do echo "--- $f"; tail -n 30 "$f"; done
fi
exit $fail
