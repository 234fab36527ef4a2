#!/bin/sh
# Many `pfi ingest` started at once into a store that does not exist yet (issue 16 item 9):
# each creates or finds the schema under one write lock, so every run is stored and every
# process exits 0. Several rounds, each on a fresh store.
# Usage: ingest_concurrent.sh PFI_BINARY
set -u
PFI=$1
N=${PFI_CONCURRENT_INGESTS:-12}
ROUNDS=${PFI_CONCURRENT_ROUNDS:-4}
fail=0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
{ echo "#Entity POWER"; echo "ID"
  for i in 1 2 3 4 5 6; do echo "GPU 0 300"; done; } > "$T/dc.txt"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    db="$T/fresh_$r.db"
    i=1
    while [ "$i" -le "$N" ]; do
        { "$PFI" ingest --db "$db" --group "g$i" --cap $((100 + i)) --telemetry "$T/dc.txt" \
              --interval 1 >"$T/out_${r}_$i" 2>"$T/err_${r}_$i"; echo $? >"$T/rc_${r}_$i"; } &
        i=$((i + 1))
    done
    wait
    i=1
    while [ "$i" -le "$N" ]; do
        rc=$(cat "$T/rc_${r}_$i")
        if [ "$rc" != 0 ]; then
            echo "FAIL round $r ingest $i: exit $rc: $(cat "$T/err_${r}_$i")"
            fail=1
        fi
        i=$((i + 1))
    done
    "$PFI" runs --db "$db" --format csv >"$T/runs_$r" 2>"$T/runs_err_$r"
    got=$(grep -c '^g[0-9]*,' "$T/runs_$r")
    if [ "$got" -eq "$N" ]; then
        echo "ok   round $r: $N concurrent ingests into a new store, $got runs stored"
    else
        echo "FAIL round $r: $got of $N runs stored: $(cat "$T/runs_err_$r")"
        fail=1
    fi
    r=$((r + 1))
done
exit $fail
