#!/bin/sh
# pfi demo cluster (run through `pfi demo cluster`): PFI AGENT_BIN [--agents N] [--out DIR]
# [--strategy NAME]. Starts N emulated agents, Prometheus if installed, the controller; a 30 %
# event with the strategy and with equal; prints and plots. Kills everything it started.
set -u
PFI=$1
PFI_AGENT_BIN=$2
shift 2
N=4 OUT=pfi-demo STRATEGY=pfi-model
while [ $# -gt 0 ]; do
    case $1 in
    --agents) N=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --strategy) STRATEGY=$2; shift 2 ;;
    *) echo "pfi demo cluster: unknown option $1" >&2; exit 2 ;;
    esac
done
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
. "$SRC/scripts/cluster-lib.sh"
trap 'cluster_cleanup; rm -rf "$WORK"' EXIT INT TERM
mkdir -p "$OUT" || exit 3
mixed_cluster "$N" || exit 1
PROM=""
if start_prometheus; then PROM="--prometheus $PROM_URL"; echo "Prometheus: $PROM_URL (scraping $N agents)";
else echo "Prometheus: not installed; telemetry from the agents"; fi
for s in "$STRATEGY" equal; do
    rm -f "$OUT/$s.db"*
    echo "== $s: 30 % event from 2 s to 8 s"
    # shellcheck disable=SC2086
    "$PFI" control --agents "$WORK/agents" --reduction 30% --start 2 --duration 6 --period 0.5 \
        --run-for 10 --strategy "$s" --db "$OUT/$s.db" $PROM || exit 1
done
"$PFI" report "$OUT/$STRATEGY.db" "$OUT/equal.db" -o "$OUT/cluster.png" \
    --title "30 % grid event, $N agents"
agents_restored && echo "every GPU is back on its original limit"
