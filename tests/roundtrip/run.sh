#!/bin/sh
# Round trip (issue 3): a sweep made from the DESIGN §7 model, written by
# tests/roundtrip/gen in each telemetry format (nvidia-smi CSV, dmon, dcgmi dmon, Prometheus
# scrapes) plus a Megatron-LM log, ingested run by run into a store with `pfi ingest`, then
# `pfi analyze --db`. Each group's PFI must equal the model's own PFI within the
# steady-state error: inside the Monte Carlo interval analyze draws from the runs' standard
# errors (ci_lo..ci_hi, at level 0.995 = 1 - 0.05/12 for the 12 groups checked together,
# Bonferroni), and within 5 % of it. Seeded: the same files every run.
# Usage: run.sh PFI_BINARY GEN_BINARY
set -u
PFI=$1
GEN=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
"$GEN" "$T" || { echo "FAIL gen"; exit 1; }
while read -r group cap fmt log files; do
    # shellcheck disable=SC2086
    set -- $files
    args=""
    for f in "$@"; do args="$args --telemetry $f"; done
    # shellcheck disable=SC2086
    if ! "$PFI" ingest -q --db "$T/rt.db" --group "$group" --class dense --gpus 2 --cap "$cap" \
            --format "$fmt" --interval 5 --throughput-log "$log" $args; then
        echo "FAIL ingest $group $cap"; fail=1
    fi
done < "$T/runs.txt"
"$PFI" analyze --db "$T/rt.db" --ci-level 0.995 --format csv > "$T/an.csv" || { echo "FAIL analyze"; exit 1; }
n=0
while read -r group want; do
    line=$(grep "^[^,]*rt\.db,$group," "$T/an.csv")
    if [ -z "$line" ]; then echo "FAIL $group: not in analyze output"; fail=1; continue; fi
    got=$(echo "$line" | cut -d, -f7); lo=$(echo "$line" | cut -d, -f8); hi=$(echo "$line" | cut -d, -f10)
    if echo "$got $lo $hi $want" | awk '{ exit !($2 != "" && $2 <= $4 && $4 <= $3 &&
            ($1 - $4 < 0 ? $4 - $1 : $1 - $4) <= 0.05 * $4) }'; then
        echo "ok   $group: PFI $got, model $want, interval [$lo, $hi]"
    else
        echo "FAIL $group: PFI $got, model $want, interval [$lo, $hi]"; fail=1
    fi
    n=$((n + 1))
done < "$T/expected.txt"
[ "$n" -eq 12 ] || { echo "FAIL: $n groups, want 12"; fail=1; }
exit $fail
