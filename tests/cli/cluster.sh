#!/bin/sh
# Telemetry from a real cluster (issue 14, DESIGN §9): GPU identity (host, UUID), files of
# several nodes, clock steps. Numbers are checked against tests/golden/cluster_reference.py
# (pandas, summing per timestamp by (host, uuid)).
# Usage: cluster.sh PFI_BINARY SOURCE_DIR      (ctest cli_cluster)
set -u
PFI=$1
SRC=$2
fail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-cluster.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
mkdir -p "$T/in"
/usr/bin/python3 "$SRC/tests/golden/cluster_reference.py" "$T/in" || { echo "FAIL reference"; exit 1; }
want() { awk -v k="$1" '$1 == k { print $2 }' "$T/in/expected.txt"; }
# job_power FILE: the job power W that pfi ingest printed
job_power() { sed -n 's/^power: [a-z_]* job \([0-9.]*\) W.*/\1/p' "$1"; }
# near NAME GOT WANT TOL
near() {
    if awk -v a="$2" -v b="$3" -v t="$4" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= t) }'; then
        echo "ok   $1 ($2 ~ $3)"
    else
        echo "FAIL $1: got '$2', want $3 +- $4"; fail=1
    fi
}
# gpus FILE: the GPU lines of ingest's summary
gpus() { grep -c '^  .*: [0-9]* rows, ' "$1"; }

# Two nodes' nvidia-smi CSVs, each numbering its GPUs 0-7, with uuid columns: one job of 16
# GPUs, the job power of pandas' sum over (host, uuid).
for q in 1 0.1; do
    qq=$(echo "$q" | tr -d .)
    check "csv-2node-q$q" 0 "$PFI" ingest --dry-run --q "$q" \
        --telemetry "$T/in/node-a.csv" --telemetry "$T/in/node-b.csv"
    near "csv-2node-power-q$q" "$(job_power "$T/out")" "$(want "csv_power_q$qq")" 0.001
    grep_out "csv-2node-16gpus-q$q" "16 GPU\|top [0-9]* of $(want csv_timestamps) complete" "$T/out"
    [ "$(gpus "$T/out")" = 16 ] && echo "ok   csv-2node-count-q$q" || { echo "FAIL csv-2node-count-q$q: $(gpus "$T/out") GPUs"; fail=1; }
    # the same job from the two nodes' dcgmi dmon files (index only: the host is the file name's)
    check "dcgmi-2node-q$q" 0 "$PFI" ingest --dry-run --q "$q" \
        --telemetry "$T/in/node-a.dcgmi" --telemetry "$T/in/node-b.dcgmi"
    near "dcgmi-2node-power-q$q" "$(job_power "$T/out")" "$(want "dcgmi_power_q$qq")" 0.001
    [ "$(gpus "$T/out")" = 16 ] && echo "ok   dcgmi-2node-count-q$q" || { echo "FAIL dcgmi-2node-count-q$q: $(gpus "$T/out") GPUs"; fail=1; }
    grep_out "dcgmi-2node-hosts-q$q" "^  node-b/GPU 7: $(want dcgmi_timestamps) rows" "$T/out"
done

# The store keeps the run's GPUs by identity (table run_gpus: name, host, uuid).
check store-2node 0 "$PFI" ingest --db "$T/c.db" --group g --cap 300 \
    --telemetry "$T/in/node-a.csv" --telemetry "$T/in/node-b.csv"
if command -v sqlite3 >/dev/null; then
    n=$(sqlite3 "$T/c.db" "SELECT count(DISTINCT host || '/' || uuid) FROM run_gpus")
    [ "$n" = 16 ] && echo "ok   store-2node-gpus" || { echo "FAIL store-2node-gpus: $n"; fail=1; }
    h=$(sqlite3 "$T/c.db" "SELECT host FROM run_gpus WHERE uuid LIKE 'GPU-17%'")
    [ "$h" = node-b ] && echo "ok   store-2node-host" || { echo "FAIL store-2node-host: '$h'"; fail=1; }
fi

# Index-only CSVs: the host from the file name, from --host-pattern, from a hostname column.
for h in a b; do
    sed 's/^\([^,]*\), \([^,]*\), [^,]*,/\1, \2,/' "$T/in/node-$h.csv" >"$T/in/idx-node-$h.csv"
    cp "$T/in/idx-node-$h.csv" "$T/in/smi_gpu-node-0$h.job7.csv"
done
check idx-2node 0 "$PFI" ingest --dry-run --q 1 --telemetry "$T/in/idx-node-a.csv" \
    --telemetry "$T/in/idx-node-b.csv"
near idx-2node-power "$(job_power "$T/out")" "$(want csv_power_q1)" 0.001
grep_out idx-2node-name "^  idx-node-b/gpu3: 40 rows" "$T/out"
check pattern-2node 0 "$PFI" ingest --dry-run --q 1 --host-pattern '_(gpu-node-[0-9a-z]+)\.' \
    --telemetry "$T/in/smi_gpu-node-0a.job7.csv" --telemetry "$T/in/smi_gpu-node-0b.job7.csv"
near pattern-2node-power "$(job_power "$T/out")" "$(want csv_power_q1)" 0.001
grep_out pattern-2node-name "^  gpu-node-0b/gpu3: 40 rows" "$T/out"
check pattern-nomatch 1 "$PFI" ingest --dry-run --host-pattern '^(x+)$' \
    --telemetry "$T/in/idx-node-a.csv" --telemetry "$T/in/idx-node-b.csv"
grep_out pattern-nomatch-said "finds no host" "$T/err"
check pattern-bad 2 "$PFI" ingest --dry-run --host-pattern 'no-group' \
    --telemetry "$T/in/idx-node-a.csv" --telemetry "$T/in/idx-node-b.csv"
{ echo "hostname, timestamp, index, power.draw [W]"
  sed -n '2,$s/^/node-a, /p' "$T/in/idx-node-a.csv"; sed -n '2,$s/^/node-b, /p' "$T/in/idx-node-b.csv"; } >"$T/in/both.csv"
check hostcol 0 "$PFI" ingest --dry-run --q 1 --telemetry "$T/in/both.csv"
near hostcol-power "$(job_power "$T/out")" "$(want csv_power_q1)" 0.001
[ "$(gpus "$T/out")" = 16 ] && echo "ok   hostcol-count" || { echo "FAIL hostcol-count: $(gpus "$T/out")"; fail=1; }

# Two files claiming one (host, GPU) over overlapping times: refused, both named.
check overlap 1 "$PFI" ingest --dry-run --host n1 --telemetry "$T/in/idx-node-a.csv" \
    --telemetry "$T/in/idx-node-b.csv"
grep_out overlap-names "GPU n1/gpu0 is in both .*idx-node-a.csv and .*idx-node-b.csv" "$T/err"
mkdir -p "$T/in/d2"; cp "$T/in/node-a.csv" "$T/in/d2/node-a.csv"
cp "$T/in/idx-node-a.csv" "$T/in/d2/idx-node-a.csv"
check overlap-uuid 1 "$PFI" ingest --dry-run --telemetry "$T/in/node-a.csv" \
    --telemetry "$T/in/d2/node-a.csv"
grep_out overlap-uuid-said "GPU GPU-00.* is in both" "$T/err"
check overlap-samename 1 "$PFI" ingest --dry-run --telemetry "$T/in/idx-node-a.csv" \
    --telemetry "$T/in/d2/idx-node-a.csv" --host-pattern '(node-a)'
grep_out overlap-samename-said "is in both" "$T/err"
# One host's capture in two pieces, one after the other: one job of 8 GPUs.
head -n 161 "$T/in/idx-node-a.csv" >"$T/in/p1.csv"
{ head -n 1 "$T/in/idx-node-a.csv"; tail -n +162 "$T/in/idx-node-a.csv"; } >"$T/in/p2.csv"
check pieces 0 "$PFI" ingest --dry-run --host node-a --telemetry "$T/in/p1.csv" --telemetry "$T/in/p2.csv"
[ "$(gpus "$T/out")" = 8 ] && echo "ok   pieces-count" || { echo "FAIL pieces-count: $(gpus "$T/out")"; fail=1; }
grep_out pieces-rows "^  node-a/gpu0: 40 rows" "$T/out"

# A clock stepped back 14 s inside one file (2 GPUs, 20 loops of 1 s, the step after loop
# 10): a new segment after the previous one, so all 20 loops are timestamps of their own
# (summed as simultaneous, loops 11-15 would fall on loops 6-10's bins).
{ echo "timestamp, index, power.draw [W]"
  for i in $(seq 0 19); do
      s=$((30 + i)); [ "$i" -ge 10 ] && s=$((30 + i - 15))
      printf '2026/01/01 12:%02d:%02d.000, 0, %d.00 W\n2026/01/01 12:%02d:%02d.010, 1, %d.00 W\n' \
          $((s / 60)) $((s % 60)) $((100 + i)) $((s / 60)) $((s % 60)) $((200 + i))
  done; } >"$T/in/step.csv"
check step-back 0 "$PFI" ingest --dry-run --q 1 --telemetry "$T/in/step.csv"
grep_out step-back-segment "time jumped back .* placed after" "$T/err"
grep_out step-back-bins "top 20 of 20 complete timestamps; 0 incomplete" "$T/out"
# mean of (100+i) + (200+i), i = 0..19: 300 + 2 * 9.5 = 319
near step-back-power "$(job_power "$T/out")" 319 0.0001
exit $fail
