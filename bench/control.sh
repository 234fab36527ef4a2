#!/bin/sh
# bench/control: real pfid agents (emulated GPUs, 8 each) on loopback, and the controller
# (bench/control_bench: the library's pfi_ctl_step, what `pfi control` runs each period)
# against the first N of them for each N: the time from a budget change to all caps
# confirmed (goal at 1 000 agents: <= 500 ms), the controller's CPU per period (goal <= 50 ms),
# its peak memory, and the agents' memory.
# usage: bench/control.sh [BUILD_DIR] [SIZES] [PERIODS]     (default: build "64 256 1000" 12)
# env: PFI_AGENT_INTERVAL (the agents' sampling interval; default 1s, 1 000 processes on one
#      machine), BENCH_AUDIT=1 also runs each size with the SQLite audit log (`--db`),
#      BENCH_WRAP a command to run the controller under (e.g. "perf record -g -o FILE"),
#      BENCH_RACKS the rack controllers of the two-level row at the largest size (default 8;
#      0 skips it). That row is a stand-in: see bench/control_bench.c and bench/README.md.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
SIZES=${2:-64 256 1000}
PERIODS=${3:-12}
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$BUILD/pfid}
PFI_AGENT_INTERVAL=${PFI_AGENT_INTERVAL:-1s}
N=0
for s in $SIZES; do [ "$s" -gt "$N" ] && N=$s; done
WORK=$(mktemp -d)
. "$SRC/scripts/cluster-lib.sh"
trap 'cluster_cleanup; rm -rf "$WORK"' EXIT INT TERM
: > "$WORK/agents"
t0=$(date +%s)
k=1
while [ $k -le "$N" ]; do
    case $((k % 3)) in
    0) start_agent "n$k" "t$k" "a$k:dense:8:0.93:24000" ;;
    1) start_agent "n$k" "t$k" "a$k:moe-ft:4:0.5:9000" "b$k:moe-pt:4:0.8:12000" ;;
    2) start_agent "n$k" "t$k" "a$k:dense-ft:8:0.9:15000" ;;
    esac || exit 1
    k=$((k + 1))
done
rss=0
for p in $CLUSTER_PIDS; do
    r=$(awk '/^VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)
    rss=$((rss + ${r:-0}))
done
echo "bench/control: $N pfid processes (emulated, 8 GPUs each, sampling every $PFI_AGENT_INTERVAL)" \
    "started in $(($(date +%s) - t0)) s; their memory: $((rss / 1024)) MiB resident in all," \
    "$((rss / N)) KiB each; cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "controller: pfi_ctl_step, period 1 s, $PERIODS periods, a budget change every third"
printf '%-10s %7s %6s %12s %12s %10s %10s %9s %8s\n' run agents GPUs "change max" \
    "change med" "CPU med" "CPU max" "RSS MiB" unconf
printf '%-10s %7s %6s %12s %12s %10s %10s %9s %8s\n' "" "" "" "(ms)" "(ms)" "(ms)" "(ms)" "" ""
status=0
for s in $SIZES; do
    ${BENCH_WRAP:-} "$BUILD/bench/control_bench" "$WORK/agents" "$PERIODS" "$s" - flat || status=1
    if [ "${BENCH_AUDIT:-0}" = 1 ]; then
        rm -f "$WORK/audit.db"
        "$BUILD/bench/control_bench" "$WORK/agents" "$PERIODS" "$s" "$WORK/audit.db" flat+audit ||
            status=1
    fi
done
racks=${BENCH_RACKS:-8}
if [ "$racks" -gt 1 ]; then
    ${BENCH_WRAP:-} "$BUILD/bench/control_bench" "$WORK/agents" "$PERIODS" "$N" - \
        "2-level" "$racks" || status=1
fi
echo "goals at 1000 agents: change max <= 500 ms, CPU per period <= 50 ms"
exit $status
