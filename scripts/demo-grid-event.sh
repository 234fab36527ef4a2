#!/bin/sh
# pfi demo grid-event (run through `pfi demo grid-event`): PFI AGENT_BIN [--speed N] [--period S]
# [--out DIR] [--strategies LIST] [--objective NAME] [--clock wall|emulated] [--json]
# (--period: the controllers' period, 1 s; --objective: pfi control's, balanced; --clock
# emulated: agents and controllers on the emulated clock, no Prometheus, the replay as fast
# as the host goes and the same run every time). The Phoenix demonstration's SRP event (SRP_total_power.csv:
# 16:09-19:32, a 30.2 % reduction held, a 5-minute ramp) replayed N times faster (120) on
# emulated pfid agents running the event's six jobs (scripts/grid-event-jobs.csv: the GPU
# split of the 256 GPUs, curves fitted to dvfs_sweep.csv), scraped by a real Prometheus on
# loopback when installed; one cluster and one controller per strategy, side by side, all at
# once. Every controller gets the same run store (each job swept on its emulated GPUs: the
# operator's measurements), the tiers of SRP_exp_performance.csv and the objective of both
# scores (pfi control --objective balanced: the weighted performance, the demonstration's, plus the
# mean performance, each job's tokens/s over its reference). Each run is settled
# (pfi report --settlement); prints the table, or with --json one object per strategy, with
# the demonstration's published weighted performance (0.9096) beside them. Kills everything
# it started.
set -u
PFI=$1
PFI_AGENT_BIN=$2
shift 2
SPEED=120 PERIOD=1 OUT=pfi-grid-event JSON=0 CLOCK=wall OBJECTIVE=balanced STRATEGIES="equal fair-headroom pfi-weighted pfi-model oracle"
# the command-line errors in pfi's one wording (src/cli/opterr.h), exit 2
usage_error() { echo "pfi: demo grid-event: $1" >&2; exit 2; }
need() { [ $# -ge 2 ] || usage_error "option '$1' needs a value (see 'pfi demo grid-event --help')"; }
while [ $# -gt 0 ]; do
    case $1 in
    --speed) need "$@"; SPEED=$2; shift 2
        python3 -c "import sys; v = float(sys.argv[1]); sys.exit(0 if 0 < v <= 3600 else 1)" "$SPEED" 2>/dev/null ||
            usage_error "--speed: bad value '$SPEED': expected a number in (0, 3600]" ;;
    --period) need "$@"; PERIOD=$2; shift 2
        python3 -c "import sys; v = float(sys.argv[1]); sys.exit(0 if 0.05 <= v <= 3600 else 1)" "$PERIOD" 2>/dev/null ||
            usage_error "--period: bad value '$PERIOD': expected a duration in [0.05, 3600] s" ;;
    --out) need "$@"; OUT=$2; shift 2 ;;
    --strategies) need "$@"; STRATEGIES=$(echo "$2" | tr ',' ' '); shift 2 ;;
    --clock) need "$@"; CLOCK=$2; shift 2
        case $CLOCK in wall | emulated) ;; *) usage_error "--clock: bad value '$CLOCK': expected wall or emulated" ;; esac ;;
    --objective) need "$@"; OBJECTIVE=$2; shift 2
        case $OBJECTIVE in tokens | weighted | mean | balanced) ;;
        *) usage_error "--objective: bad value '$OBJECTIVE': expected tokens, weighted, mean or balanced" ;;
        esac ;;
    --json) JSON=1; shift ;;
    *) usage_error "unknown option '$1' (see 'pfi demo grid-event --help')" ;;
    esac
done
# the strategies: each a known one, once, at least one (two controllers on one cluster would
# fight over its caps and write one audit log)
[ -n "$(echo "$STRATEGIES" | tr -d ' ')" ] || usage_error "--strategies: empty: expected one or more of equal, fair-headroom, pfi-weighted, pfi-model, oracle"
seen=" "
for s in $STRATEGIES; do
    case $s in equal | fair-headroom | pfi-weighted | pfi-model | oracle) ;;
    *) usage_error "--strategies: bad value '$s': expected equal, fair-headroom, pfi-weighted, pfi-model or oracle" ;;
    esac
    case "$seen" in *" $s "*) usage_error "--strategies: '$s' given twice" ;; esac
    seen="$seen$s "
done
SRC=$(cd "$(dirname "$0")/.." && pwd)
DATA=$SRC/data/emerald_phoenix_2025
JOBS=$SRC/scripts/grid-event-jobs.csv
WORK=$(mktemp -d)
. "$SRC/scripts/cluster-lib.sh"
CTL_PIDS=""
trap 'for p in $CTL_PIDS; do kill "$p" 2>/dev/null; done; cluster_cleanup; rm -rf "$WORK"' EXIT
trap 'exit 2' INT TERM
[ -e "$OUT" ] && [ ! -d "$OUT" ] && usage_error "--out: bad value '$OUT': it exists and is not a directory"
mkdir -p "$OUT" 2>/dev/null || { echo "pfi: demo grid-event: --out $OUT: cannot create the directory" >&2; exit 3; }
say() { [ "$JSON" = 1 ] && echo "$@" >&2 || echo "$@"; }

# the event as the controller runs it: from the trace (pfi schedule), 20 event-minutes of
# pre-event window before the ramp (the settlement's baselines: power and each job's
# tokens/s), 4 after the hold (the caps coming off)
"$PFI" schedule --format json "$DATA/SRP_total_power.csv" > "$WORK/sched.json" || exit 1
eval "$(python3 - "$WORK/sched.json" "$SPEED" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); e = d["events"][0]; speed = float(sys.argv[2])
t0 = e["start_s"] - 1200
print(f"T0={t0:.0f} START={e['start_s']:.0f} END={e['end_s']:.0f} RAMP={e['ramp_s']:.0f}")
print(f"RUN_FOR={(e['end_s'] + 240 - t0) / speed:.3f} PRE_S={d['trace']['pre_event_w']:.0f}")
print(f"CLOCK_START={t0 / speed!r}")
PY
)"
say "SRP event: schedule $START-$END s (ramp $RAMP s) from the trace; replay from $T0 s at ${SPEED}x: $RUN_FOR s per strategy"

# start_job_agent CLUSTER K JOB CLASS GPUS ALPHA PU PS GAMMA FMIN TPUT: one agent, one job
start_job_agent() {
    dir="$WORK/$1/agent.$2"
    mkdir -p "$dir" || return 1
    seed=$(( $2 + 1 )) # every strategy's cluster the same GPUs: job k's seed is k + 1
    echo "0 $3 $4" > "$dir/jobs"
    i=1; while [ $i -lt "$5" ]; do echo "$i $3 $4" >> "$dir/jobs"; i=$((i + 1)); done
    (umask 077 && printf 'tok%s\n' "$2" > "$dir/token")
    cat > "$dir/pfid.conf" <<CONF
listen = 127.0.0.1:0
port_file = $dir/port
hostname = $1-node$2
token_file = $dir/token
backend = emulated
emulate = gpus=$5,alpha=$6,pu=$7,ps=$8,gamma=$9,fmin=${10},tdp=400,min=100,max=400,tput=${11},startup=0,ckpt=0,tau=0.05,report=0.2,noise=0.005,seed=$seed
interval = 200ms
jobs = static
jobs_file = $dir/jobs
journal = $dir/cap-journal
clock = $CLOCK
lease_policy = hold
shutdown = restore
log_level = warning
CONF
    "$PFI_AGENT_BIN" --config "$dir/pfid.conf" 2>>"$dir/log" &
    CLUSTER_PIDS="$CLUSTER_PIDS $!"
    n=0
    while [ ! -s "$dir/port" ]; do
        n=$((n + 1)); [ $n -gt 200 ] && { echo "agent $1-node$2 did not start" >&2; cat "$dir/log" >&2; return 1; }
        sleep 0.05
    done
    echo "http://127.0.0.1:$(cat "$dir/port") tok$2" >> "$WORK/$1/agents"
    echo "http://127.0.0.1:$(cat "$dir/port") tok$2" >> "$WORK/agents"
}

# the agents files hold tokens: the user's alone (pfi control warns otherwise)
(umask 077 && : > "$WORK/agents")
# the operator's measurements: each job swept on its emulated GPUs (the very GPUs of its
# agents: the same model, spread and seed) at the 50 W steps of dvfs_sweep.csv into one run
# store, what every strategy but the oracle gets; the oracle knows the true curves: the same
# GPUs swept every 10 W without measurement noise, a store of its own
k=0
grep -v '^#' "$JOBS" | tail -n +2 > "$WORK/jobs.rows"
while IFS=, read -r job cls gpus sweep alpha pu ps gamma fmin tput; do
    k=$((k + 1))
    spec="gpus=$gpus,alpha=$alpha,pu=$pu,ps=$ps,gamma=$gamma,fmin=$fmin,tdp=400,min=100,max=400,tput=$tput,startup=0,ckpt=0,seed=$((k + 1))"
    # (only the stores the strategies asked for use)
    sts=""
    # (the oracle's store at 400 W alone when the oracle does not run: every settlement's
    # reference tokens/s comes from it)
    case " $STRATEGIES " in *" oracle "*) sts="oracle:$(seq -s, 400 -10 100)" ;; *) sts="oracle:400" ;; esac
    [ -n "$(echo " $STRATEGIES " | sed 's/ oracle / /g' | tr -d ' ')" ] && sts="store:400,350,300,250,200,150,100 $sts"
    for st in $sts; do
        # the oracle's sweep without measurement noise: 10 W apart, a 1 % noise would make
        # its curve zigzag
        [ "${st%%:*}" = oracle ] && spec="$spec,noise=0"
        "$PFI" sweep --backend emulated --emulate "$spec" --caps "${st#*:}" --duration 2m \
            --interval 5s --warmup 30s --group "$job" --db "$WORK/${st%%:*}.db" > "$WORK/sweep.log" 2>&1 ||
            { cat "$WORK/sweep.log" >&2; exit 1; }
    done
done < "$WORK/jobs.rows" || exit 1
for s in $STRATEGIES; do
    mkdir -p "$WORK/$s"; (umask 077 && : > "$WORK/$s/agents")
    k=0
    while IFS=, read -r job cls gpus sweep alpha pu ps gamma fmin tput; do
        k=$((k + 1))
        start_job_agent "$s" $k "$job" "$cls" "$gpus" "$alpha" "$pu" "$ps" "$gamma" "$fmin" "$tput" || exit 1
    done < "$WORK/jobs.rows"
done
PROM=""
# only what the controllers query is stored (256 GPUs' every family twice a second is what
# would cost the replay its pace on a small machine)
PROM_KEEP='pfi_gpu_(power_watts|energy_joules_total|last_sample_timestamp_seconds|dram_active_ratio|tensor_active_ratio)'
if [ "$CLOCK" = emulated ]; then say "Prometheus: not used on the emulated clock; telemetry from the agents"
elif start_prometheus; then PROM="--prometheus $PROM_URL"; say "Prometheus: $PROM_URL (scraping $(wc -l < "$WORK/agents") agents)"
else say "Prometheus: not installed; telemetry from the agents"; fi

EPOCH=$(python3 -c "import time; print(f'{time.time() - $T0 / $SPEED:.3f}')")
CLOCK_OPT=""
[ "$CLOCK" = emulated ] && CLOCK_OPT="--clock emulated:$CLOCK_START"
for s in $STRATEGIES; do
    rm -f "$OUT/$s.db"*
    store=$WORK/store.db
    [ "$s" = oracle ] && store=$WORK/oracle.db
    # shellcheck disable=SC2086
    "$PFI" control --agents "$WORK/$s/agents" --schedule "$DATA/SRP_total_power.csv" \
        --speed "$SPEED" --epoch "$EPOCH" --period $PERIOD --run-for "$RUN_FOR" --strategy "$s" \
        --tiers "$DATA/SRP_exp_performance.csv" --store "$store" --db "$OUT/$s.db" \
        --objective "$OBJECTIVE" --quiet $PROM $CLOCK_OPT > "$WORK/$s.out" 2> "$WORK/$s.err" &
    CTL_PIDS="$CTL_PIDS $!"
done
say "running ${STRATEGIES} side by side ..."
# pfi control's exit 5 (budget not met) and 6 (degraded: stale telemetry, a refused cap) are
# runs that finished; the settlement reports what they did. Anything else is a failure.
rc=0
for p in $CTL_PIDS; do
    wait "$p"
    case $? in
        0) ;;
        5 | 6) say "a controller finished with exit 5 or 6 (see its lines in $OUT/*.err)" ;;
        *) rc=1 ;;
    esac
done
for s in $STRATEGIES; do cp "$WORK/$s.err" "$OUT/$s.err" 2>/dev/null; done
CTL_PIDS=""
[ $rc -eq 0 ] || { for s in $STRATEGIES; do cat "$WORK/$s.err" >&2; done; exit 1; }
# every strategy settled against one reference tokens/s a job: its GPUs' uncapped tokens/s
# from the noise-free sweep (the oracle's store, at 400 W). Each run's own pre-event readings
# (10 a job, 0.5 % noise each) would move a job's performance by 0.16 % from run to run, as
# much as the strategies differ; the jobs are the same GPUs in every cluster.
python3 - "$WORK/oracle.db" > "$OUT/reference.csv" <<'PY' || exit 1
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "SELECT g.name, r.throughput FROM runs r JOIN groups g ON g.id = r.group_id"
    " WHERE r.cap_w = 400 ORDER BY g.name").fetchall()
print("job,tput_tok_s")
for job, t in rows:
    print(f"{job},{t!r}")
PY
for s in $STRATEGIES; do
    "$PFI" report --settlement --json --speed "$SPEED" --interval 300 --pre-window 1200 \
        --skip "$RAMP" --tiers "$DATA/SRP_exp_performance.csv" --reference "$OUT/reference.csv" \
        "$OUT/$s.db" > "$OUT/$s.json" || exit 1
done
# shellcheck disable=SC2086
set -- $STRATEGIES
dbs=""; for s in "$@"; do dbs="$dbs $OUT/$s.db"; done
# shellcheck disable=SC2086
# (--speed: the power swings in event time, the log's seconds x SPEED: what a grid operator
# reads; printed after the table)
"$PFI" report $dbs -o "$OUT/grid-event.png" --title "SRP event replayed at ${SPEED}x" \
    --speed "$SPEED" > "$OUT/report.txt" 2> "$WORK/report.err" ||
    say "(no figure: $(tail -n 1 "$WORK/report.err"))"
python3 - "$OUT" "$JSON" "$SPEED" "$OBJECTIVE" "$@" <<'PY'
import json, sys
out, as_json, speed, objective = sys.argv[1], sys.argv[2] == "1", float(sys.argv[3]), sys.argv[4]
strategies = sys.argv[5:]
res = {}
for s in strategies:
    d = json.load(open(f"{out}/{s}.json"))
    res[s] = {
        "max_over_target_pct": d["max_over_target_pct"],
        "seconds_over_target": d["seconds_over_target"],
        "energy_shed_kwh": d["energy_shed_kwh"],
        "weighted_performance": d["weighted_performance"],
        "mean_performance": d["mean_performance"],
        "tier_violations": d["tier_violations"],
        "per_job": [{"name": j["name"], "tier": j["tier"], "performance": j["performance"]}
                    for j in d["per_job"]],
    }
doc = {"event": "SRP 2025-05-04 (data/emerald_phoenix_2025/SRP_total_power.csv)", "speed": speed,
       "objective": objective,
       "published_weighted_performance": 0.9096,
       "published_note": "the demonstration's own ensemble value, with pauses and resizing",
       "strategies": res}
if as_json:
    print(json.dumps(doc, indent=1))
    sys.exit(0)
def f(v, fmt):
    return "-" if v is None else format(v, fmt)
print(f"{'strategy':15} {'max over %':>10} {'s over':>8} {'kWh shed':>9} {'weighted':>9} {'mean':>7} {'tier viol.':>10}")
for s, r in res.items():
    print(f"{s:15} {f(r['max_over_target_pct'], '.2f'):>10} {f(r['seconds_over_target'], '.0f'):>8} "
          f"{f(r['energy_shed_kwh'], '.1f'):>9} {f(r['weighted_performance'], '.4f'):>9} "
          f"{f(r['mean_performance'], '.4f'):>7} {r['tier_violations']:>10}")
print(f"{'published':15} {'':>10} {'':>8} {'':>9} {0.9096:>9.4f}   (the demonstration: caps, pauses and resizing)")
print("per job (performance during the event):")
by = {s: {j["name"]: j for j in r["per_job"]} for s, r in res.items()}
names = sorted(set().union(*[set(b) for b in by.values()]))
print(f"  {'job':30} {'tier':7} " + " ".join(f"{s:>13}" for s in res))
for n in names:
    tier = next((b[n]["tier"] for b in by.values() if n in b and b[n]["tier"]), "-")
    print(f"  {n:30} {tier:7} " + " ".join(
        f"{f(by[s][n]['performance'] if n in by[s] else None, '.4f'):>13}" for s in res))
PY
# each strategy's power swings in event time (pfi report --speed; the log's line shortened)
swings=$(awk -F': ' '/^[^ ]/ { split($2, a, ","); s = a[1] }
    /^  power swings/ { sub(/^  power swings( in event time \([^)]*\))?: /, ""); print "  " s ": " $0 }' \
    "$OUT/report.txt" 2>/dev/null)
[ -n "$swings" ] && say "power swings in event time (the replay's seconds x $SPEED):" && say "$swings"
agents_restored >/dev/null 2>&1 || true
