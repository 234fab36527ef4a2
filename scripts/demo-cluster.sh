#!/bin/sh
# pfi demo cluster (run through `pfi demo cluster`): PFI AGENT_BIN [--agents N] [--out DIR]
# [--strategy NAME]. Starts N emulated agents, Prometheus if installed, the controller; a 30 %
# event with the strategy and with equal; prints and plots. Kills everything it started.
set -u
PFI=$1
PFI_AGENT_BIN=$2
shift 2
N=4 OUT=pfi-demo STRATEGY=pfi-model
# the command-line errors in pfi's one wording (src/cli/opterr.h), exit 2
usage_error() { echo "pfi: demo cluster: $1" >&2; exit 2; }
need() { [ $# -ge 2 ] || usage_error "option '$1' needs a value (see 'pfi demo cluster --help')"; }
while [ $# -gt 0 ]; do
    case $1 in
    --agents) need "$@"; N=$2; shift 2
        case $N in '' | *[!0-9]*) usage_error "--agents: bad value '$N': expected an integer from 1 to 64" ;; esac
        [ "$N" -ge 1 ] && [ "$N" -le 64 ] || usage_error "--agents: bad value '$N': expected an integer from 1 to 64" ;;
    --out) need "$@"; OUT=$2; shift 2 ;;
    --strategy) need "$@"; STRATEGY=$2; shift 2 ;;
    *) usage_error "unknown option '$1' (see 'pfi demo cluster --help')" ;;
    esac
done
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
. "$SRC/scripts/cluster-lib.sh"
trap 'cluster_cleanup; rm -rf "$WORK"' EXIT INT TERM
[ -e "$OUT" ] && [ ! -d "$OUT" ] && usage_error "--out: bad value '$OUT': it exists and is not a directory"
mkdir -p "$OUT" 2>/dev/null || { echo "pfi: demo cluster: --out $OUT: cannot create the directory" >&2; exit 3; }
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
