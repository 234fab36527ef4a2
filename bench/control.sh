#!/bin/sh
# bench/control: 64 pfid agents (emulated, 8 GPUs each) on loopback; the time from a budget
# change to all caps confirmed (goal < 500 ms) and the controller's CPU per period.
# usage: bench/control.sh [BUILD_DIR] [AGENTS]
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
N=${2:-64}
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$BUILD/pfid}
# 64 pfid processes on one machine: sample every 250 ms, not 100 ms
PFI_AGENT_INTERVAL=${PFI_AGENT_INTERVAL:-250ms}
WORK=$(mktemp -d)
. "$SRC/scripts/cluster-lib.sh"
trap 'cluster_cleanup; rm -rf "$WORK"' EXIT INT TERM
: > "$WORK/agents"
k=1
while [ $k -le "$N" ]; do
    case $((k % 3)) in
    0) start_agent "n$k" "t$k" "a$k:dense:8:0.93:24000" ;;
    1) start_agent "n$k" "t$k" "a$k:moe-ft:4:0.5:9000" "b$k:moe-pt:4:0.8:12000" ;;
    2) start_agent "n$k" "t$k" "a$k:dense-ft:8:0.9:15000" ;;
    esac
    k=$((k + 1))
done
"$BUILD/bench/control_bench" "$WORK/agents" 12
