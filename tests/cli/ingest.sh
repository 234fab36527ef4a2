#!/bin/sh
# End-to-end tests of pfi ingest / pfi runs / pfi analyze --db.
# Usage: ingest.sh PFI_BINARY SOURCE_DIR CASES_DIR
set -u
PFI=$1
SRC=${2:-.}
CASES=${3:-}
fail=0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
check ingest-help 0 "$PFI" ingest --help
check runs-help 0 "$PFI" runs --help
check ingest-usage 2 "$PFI" ingest --db "$T/x.db"
check runs-missing-db 1 "$PFI" runs --db "$T/none.db"

# Round trip: a sweep from the model y = known, written as dcgmi dmon + Megatron logs.
# Per GPU power 600/450/300 W (2 GPUs), throughput 100/90/70 samples/s:
# x = 0.25, 0.5; y = 0.1, 0.3; PFI = (2.5 + 5/3) / 2 = 2.0833333333333335.
for spec in "700 600 100" "500 450 90" "300 300 70"; do
    set -- $spec
    { echo "#Entity POWER  TOTEC"; echo "ID"
      for i in 1 2 3 4 5 6; do echo "GPU 0 $2 $((i * $2 * 5000))"; echo "GPU 1 $2 $((i * $2 * 5000))"; done
    } > "$T/dc_$1.txt"
    { echo "[before the start of training step] datetime: 2025-01-01 00:00:00"
      for i in 1 2 3 4; do
        echo " iteration $((i * 10))/ 100 | consumed samples: $((i * 10 * $3)) | elapsed time per iteration (ms): 1000.0 | global batch size: $3 | number of skipped iterations: 0 |"
      done; } > "$T/log_$1.log"
    check "ingest-cap-$1" 0 "$PFI" ingest --db "$T/rt.db" --group g1 --class dense --gpus 2 \
        --cap "$1" --telemetry "$T/dc_$1.txt" --interval 5 --throughput-log "$T/log_$1.log"
done
# 2 GPUs x 300 W x 25 s = 15000 J, from the counter (5 steps x 1500 J x 2).
grep_out ingest-energy-counter "energy: 15000.000 J (counter)" "$T/out"
check runs-table 0 "$PFI" runs --db "$T/rt.db"
grep_out runs-table-row "g1 .*dense .*300 .*600.000" "$T/out"
check runs-json 0 "$PFI" runs --db "$T/rt.db" --format json
grep_out runs-json-features '"dram_copy_product"\|"power_w"' "$T/out"
check analyze-db 0 "$PFI" analyze --db "$T/rt.db" --format csv
grep_out analyze-db-pfi ",g1,dense,700,1200,100,2.0833333333333" "$T/out"
# A standard error below 1e-12 of its estimate is rounding noise (PFI_SE_ROUNDING): a store
# holding such values (written before the rule) shows 0 in the table, the CSV and the JSON.
cp "$T/rt.db" "$T/se.db"
sqlite3 "$T/se.db" "UPDATE runs SET power_se_w = 4.05e-15, throughput_se = 3e-16"
for f in table csv json; do
    check "runs-se-noise-$f" 0 "$PFI" runs --db "$T/se.db" --format $f
    if grep -q "e-1[56]" "$T/out"; then echo "FAIL runs-se-noise-$f: noise printed"; fail=1; fi
done
grep_out runs-se-noise-json-zero '"power_se_w": 0\(\.0\)\?,' "$T/out"
# Counted means (warm-up 0) the collector cannot vouch for: a temperature sample two days
# before its first. The files are read again storing every sample; the notes are said once,
# and the mean is every sample's: (60 + 61 + 62 + 63) / 4.
{ echo "timestamp, index, power.draw [W], power.limit [W], temperature.gpu"
  echo "2026/01/14 10:00:00.000, 0, 250.00 W, 300.00 W, 60"
  echo "2026/01/14 10:00:01.000, 0, 251.00 W, 300.00 W, 61"
  echo "2026/01/12 10:00:02.000, 0, 252.00 W, 300.00 W, 62"
  echo "2026/01/14 10:00:03.000, 0, 253.00 W, 300.00 W, 63"; } > "$T/back.csv"
check ingest-counted-reread 0 "$PFI" ingest --dry-run --timezone UTC --telemetry "$T/back.csv"
n=$(grep -c "time jumped back" "$T/err" "$T/out" | awk -F: '{s += $2} END {print s}')
[ "$n" = 1 ] && echo "ok   ingest-counted-reread-once" || { echo "FAIL ingest-counted-reread-once ($n)"; fail=1; }
check ingest-counted-reread-store 0 "$PFI" ingest --db "$T/back.db" --group g --cap 300 \
    --timezone UTC --telemetry "$T/back.csv"
check ingest-counted-reread-runs 0 "$PFI" runs --db "$T/back.db" --format json
grep_out ingest-counted-reread-mean '"temp_c": 61.5' "$T/out"
# Streamed power (stream_power: regular files read twice, the power and energy series not
# stored) where the second read cannot vouch for the stored path's order: the power's clock
# set back two days. Read again stored: the note said once, job power 253 W (the top 1 of 4
# loops), energy (250 + 251) / 2 + (252 + 253) / 2 = 503 J over the two 1 s steps.
{ echo "timestamp, index, power.draw [W]"
  echo "2026/01/14 10:00:00.000, 0, 250.00 W"
  echo "2026/01/14 10:00:01.000, 0, 251.00 W"
  echo "2026/01/12 10:00:02.000, 0, 252.00 W"
  echo "2026/01/12 10:00:03.000, 0, 253.00 W"; } > "$T/back2.csv"
check ingest-stream-reread 0 "$PFI" ingest --dry-run --timezone UTC --telemetry "$T/back2.csv"
grep_out ingest-stream-reread-power "job 253.0000 W (se undefined, top 1 of 4" "$T/out"
grep_out ingest-stream-reread-energy "energy: 503.000 J (power-trapezoid; partial" "$T/out"
n=$(grep -c "time jumped back" "$T/err" "$T/out" | awk -F: '{s += $2} END {print s}')
[ "$n" = 1 ] && echo "ok   ingest-stream-reread-once" || { echo "FAIL ingest-stream-reread-once ($n)"; fail=1; }
# A pipe is read once (not streamed): the same report as the file, the notes once. GPU 1's
# power is missing in loops 3 and 4: job power 300 + 250 W over the 4 complete loops; energy
# from the counters, 5 steps x 300 J x 2 GPUs.
{ echo "#Entity POWER  TOTEC"; echo "ID"
  for i in 1 2 3 4 5 6; do
    p=250; [ "$i" = 3 ] || [ "$i" = 4 ] && p=N/A
    echo "GPU 0 300 $((i * 300000))"; echo "GPU 1 $p $((i * 300000))"; done
} > "$T/pipe.txt"
check ingest-stream-file 0 "$PFI" ingest --dry-run --telemetry "$T/pipe.txt"
cp "$T/out" "$T/file.out"
grep "pfi: note" "$T/err" | sed "s#$T/pipe.txt#F#" > "$T/file.err"
mkfifo "$T/fifo.txt"
cat "$T/pipe.txt" > "$T/fifo.txt" &
check ingest-stream-fifo 0 "$PFI" ingest --dry-run --telemetry "$T/fifo.txt"
wait
grep "pfi: note" "$T/err" | sed "s#$T/fifo.txt#F#" > "$T/fifo.err"
cmp -s "$T/out" "$T/file.out" && cmp -s "$T/fifo.err" "$T/file.err" && [ -s "$T/file.err" ] \
    && echo "ok   ingest-stream-fifo-same" || { echo "FAIL ingest-stream-fifo-same"; fail=1; }
# A FIFO is copied to a temporary file and streamed like a file; where no temporary file can
# be made ($TMPDIR not a directory) it is read once, stored: the same report either way.
cat "$T/pipe.txt" > "$T/fifo.txt" &
check ingest-stream-fifo-nospool 0 env TMPDIR="$T/no-such-dir" "$PFI" ingest --dry-run --telemetry "$T/fifo.txt"
wait
cmp -s "$T/out" "$T/file.out" && echo "ok   ingest-stream-fifo-nospool-same" || { echo "FAIL ingest-stream-fifo-nospool-same"; fail=1; }
grep_out ingest-stream-file-power "job 550.0000 W (se undefined, top 1 of 4 complete timestamps; 2 incomplete" "$T/file.out"
# The job power's bounded summary (131 072 distinct values when streamed): 140 000 distinct
# loop powers, 200 + k/1000 W for k a permutation of 0..139 999 (7919 is prime to 140 000),
# in one GPU's CSV. --q 1 needs every value, more than the summary keeps: the read falls back
# to storing them; --q 0.1 needs the top 14 000, which the folding keeps. Both as from a FIFO
# (the stored read): mean of all 200 + 69.9995 = 269.9995 W; of the top 14 000, 339.999 −
# 6.9995 = 332.9995 W.
awk 'BEGIN { print "timestamp, index, power.draw [W]"
    for (i = 0; i < 140000; i++) { ms = i * 100; s = int(ms / 1000)
        printf "2026/01/14 %02d:%02d:%02d.%03d, 0, %.3f W\n", 10 + int(s / 3600), int(s / 60) % 60, s % 60, ms % 1000, 200 + ((i * 7919) % 140000) * 0.001 } }' > "$T/distinct.csv"
for q in 1 0.1; do
    check "ingest-topq-file-$q" 0 "$PFI" ingest --dry-run --timezone UTC --q "$q" --telemetry "$T/distinct.csv"
    grep '^power:' "$T/out" > "$T/topq_file.out"
    [ "$q" = 1 ] && cp "$T/topq_file.out" "$T/topq_all.out"
    cat "$T/distinct.csv" > "$T/fifo.txt" &
    check "ingest-topq-fifo-$q" 0 "$PFI" ingest --dry-run --timezone UTC --q "$q" --telemetry "$T/fifo.txt"
    wait
    grep '^power:' "$T/out" > "$T/topq_fifo.out"
    cmp -s "$T/topq_file.out" "$T/topq_fifo.out" && [ -s "$T/topq_file.out" ] \
        && echo "ok   ingest-topq-same-$q" || { echo "FAIL ingest-topq-same-$q"; cat "$T/topq_file.out" "$T/topq_fifo.out"; fail=1; }
done
# (se: the sample standard deviation of k/1000 for k = 0..n−1 over sqrt(n), h·sqrt((n² − 1)/12)
# ·sqrt(n/(n − 1))/sqrt(n): 0.108 for n = 140 000, 0.03416 for n = 14 000.)
grep_out ingest-topq-all "job 269.9995 W (se 0.108, top 140000 of 140000" "$T/topq_all.out"
check ingest-topq-top 0 "$PFI" ingest --dry-run --timezone UTC --telemetry "$T/distinct.csv"
grep_out ingest-topq-top-mean "job 332.9995 W (se 0.03416, top 14000 of 140000" "$T/out"
grep_out ingest-stream-file-energy "energy: 3000.000 J (counter)" "$T/file.out"
# An implausible power cell (99 999 999 W: a unit mix-up, a glitch) with no limit column:
# above the default bound (5000 W per GPU) it is out of range, dropped, never integrated.
{ echo "timestamp, index, power.draw [W]"
  echo "2026/01/14 10:00:00.000, 0, 250.00 W"
  echo "2026/01/14 10:00:01.000, 0, 99999999.00 W"
  echo "2026/01/14 10:00:02.000, 0, 252.00 W"
  echo "2026/01/14 10:00:03.000, 0, 253.00 W"; } > "$T/huge.csv"
check ingest-power-bound 0 "$PFI" ingest --dry-run --timezone UTC --telemetry "$T/huge.csv"
grep_out ingest-power-bound-job "job 253.0000 W (se undefined, top 1 of 3 complete" "$T/out"
grep_out ingest-power-bound-count "power_w 3 valid / 0 missing / 1 out of range" "$T/out"
grep_out ingest-power-bound-note "huge.csv:3: power_w: gpu0: 1 of 4 power_w samples out of range (max seen 99999999 on that line; range 0..5000 W per GPU: no max limit column or --max-power)" "$T/err"
# The note names its line on every reader's path: a dcgmi dmon capture long enough for the
# block path, two glitches of GPU 2 (lines 149 and 301: 2 header lines, 8 GPUs a loop): the largest
# is the one named.
awk 'BEGIN { print "#Entity   POWER   TMPTR"; print "ID"
             for (i = 0; i < 300; i++) { v = 300 + i % 7; if (i == 146) v = 9000; if (i == 298) v = 12000.5
                 printf "GPU %d     %.3f   %d\n", i % 8, v, 40 }}' > "$T/glitch_dmon.txt"
check ingest-power-bound-dmon 0 "$PFI" ingest --dry-run --telemetry "$T/glitch_dmon.txt"
grep_out ingest-power-bound-dmon-line "glitch_dmon.txt:301: power_w: GPU 2: 2 of 38 power_w samples out of range (max seen 12000.5 on that line" "$T/err"
check ingest-power-bound-raised 0 "$PFI" ingest --dry-run --timezone UTC --max-power 60000000 \
    --telemetry "$T/huge.csv"
grep_out ingest-power-bound-raised-job "job 99999999.0000 W" "$T/out"
# Prometheus: a scrape's rows are counted (one per GPU and time); the HTTP API's epoch times
# are UTC, not zone-less local times.
check ingest-prom-rows 0 "$PFI" ingest --dry-run --telemetry "$SRC/tests/cases/case-14/new_exporter_hostname.prom"
grep_out ingest-prom-rows-count "format prometheus, 1 rows" "$T/out"
check ingest-prom-api-utc 1 "$PFI" ingest --dry-run --timezone Europe/Berlin \
    --telemetry "$SRC/tests/fuzz/corpus/prom_api/vector.json"
grep_out ingest-prom-api-utc-line "times are UTC (ISO 8601 with offsets, epoch seconds)" "$T/out"
grep -q "zone-less" "$T/out" && { echo "FAIL ingest-prom-api-no-zone-line"; fail=1; } \
    || echo "ok   ingest-prom-api-no-zone-line"
# Re-ingest at an existing cap replaces, never duplicates.
check ingest-replace 0 "$PFI" ingest --db "$T/rt.db" --group g1 --cap 300 --gpus 2 \
    --telemetry "$T/dc_300.txt" --interval 5 --throughput-log "$T/log_300.log"
grep_out ingest-replace-msg "replaced" "$T/out"
check runs-csv 0 "$PFI" runs --db "$T/rt.db" --format csv
[ "$(grep -c '^g1,' "$T/out")" -eq 3 ] && echo "ok   runs-count" || { echo "FAIL runs-count"; fail=1; }
# Every store connection is closed, leaving no SQLite side file: a read-only opener of a
# file left in WAL mode (pfi control --store) would create -wal and -shm and never remove them.
[ ! -e "$T/rt.db-wal" ] && [ ! -e "$T/rt.db-shm" ] && echo "ok   ingest-no-wal-shm" \
    || { echo "FAIL ingest-no-wal-shm: $(ls "$T" | grep -e -wal -e -shm | tr '\n' ' ')"; fail=1; }
mode=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode").fetchone()[0])' "$T/rt.db" 2>&1)
[ "$mode" = delete ] && echo "ok   ingest-store-closed-in-rollback-mode" \
    || { echo "FAIL ingest-store-closed-in-rollback-mode: $mode"; fail=1; }

# Energy (tests/data/energy): never across a time gap, missing when unknown, partial labelled,
# an implausible energy counter not used.
E=$SRC/tests/data/energy
check energy-gap 0 "$PFI" ingest --dry-run --telemetry "$E/dmon_gap.txt"
grep_out energy-gap-value "energy: 726.500 J (power-trapezoid; partial: gpu0 covers 3 of 604 s)" "$T/out"
grep_out energy-gap-flag "^flags:.* time-gap energy-partial" "$T/out"
grep_out energy-gap-note "gpu0: power_w: 1 time gap longer than 10x the median sampling step (1 s), longest 601 s: not integrated across" "$T/err"
if grep -q "dmon_gap" "$T/err"; then echo "FAIL energy-gap-note-no-file: the note names the file"; fail=1; else echo "ok   energy-gap-note-no-file"; fi

# The time grid. An nvidia-smi -lms 100 capture: 4 GPUs, loops 100..112 ms apart, the GPUs of
# a loop 0..3 ms apart, nothing missing: jitter alone leaves no timestamp incomplete. One row
# dated 1970/01/01 among them, two captures 9 days apart at 0.1 s, or a file without
# timestamps beside a timestamped one: refused, saying the span, the step, the grid points
# and the cause, never just "input exceeds a size limit".
python3 - "$T" <<'PY'
import random, sys
random.seed(7)
def ts(ms, day=1):
    s = ms // 1000
    return "2025/01/%02d 10:%02d:%02d.%03d" % (day, s // 60, s % 60, ms % 1000)
rows, ms = ["timestamp, index, power.draw [W]"], 0
for loop in range(400):
    for g in range(4):
        rows.append("%s, %d, %d.00 W" % (ts(ms + g * random.randint(0, 3)), g, 200 + g))
    ms += random.randint(100, 112)
open(sys.argv[1] + "/jitter.csv", "w").write("\n".join(rows) + "\n")
far = rows[:9] + ["1970/01/01 00:00:00.000, 1, 201.00 W"] + rows[9:]
open(sys.argv[1] + "/far.csv", "w").write("\n".join(far) + "\n")
two = rows[0:1] + ["%s, 0, 300 W" % ts(100 * i) for i in range(20)] + \
      ["%s, 0, 300 W" % ts(100 * i, 10) for i in range(20)]
open(sys.argv[1] + "/two.csv", "w").write("\n".join(two) + "\n")
PY
check grid-jitter 0 "$PFI" ingest --dry-run --telemetry "$T/jitter.csv"
grep_out grid-jitter-complete "0 incomplete left out; grid 0.10" "$T/out"
if grep -q "^flags:.*incomplete" "$T/out"; then echo "FAIL grid-jitter-flag"; cat "$T/out"; fail=1; else echo "ok   grid-jitter-flag"; fi
# A row dated 1970 is implausible (before 2000): excluded with a note naming its line,
# never integrated (the grid stays 0.1 s, no 55-year span).
check grid-far-off 0 "$PFI" ingest --dry-run --telemetry "$T/far.csv"
grep_out grid-far-off-excluded "far.csv:10: time 1970-01-01 00:00:00 is implausible .*: row excluded, never integrated" "$T/err"
grep_out grid-far-off-counted "1 sample at implausible times" "$T/err"
grep_out grid-far-off-grid "grid 0.1" "$T/out"
grep_out grid-far-off-line "far.csv:10: gpu1: time jumped back" "$T/err"
check grid-two-captures 1 "$PFI" ingest --dry-run --telemetry "$T/two.csv"
grep_out grid-two-captures-why "grid step 0.1 s .*two groups 9 days apart (20 rows to 2025-01-01 10:00:01, 20 from 2025-01-10 10:00:00); .*--align 0.75 or coarser" "$T/err"
printf '#Entity POWER\nID\nGPU 0 300\nGPU 0 300\nGPU 0 300\n' > "$T/nominal.txt"
check grid-nominal-mix 1 "$PFI" ingest --dry-run --telemetry "$T/jitter.csv" --telemetry "$T/nominal.txt"
grep_out grid-nominal-mix-why "nominal times .* do not mix with timestamps" "$T/err"
check energy-gap-back 0 "$PFI" ingest --dry-run --telemetry "$E/dmon_back.txt"
grep_out energy-gap-back-value "energy: 485.000 J" "$T/out"
check energy-gap-csv 0 "$PFI" ingest --dry-run --telemetry "$E/csvgap.csv"
grep_out energy-gap-csv-value "energy: 5947.200 J" "$T/out"
grep_out energy-gap-csv-power "job 4926.0000 W" "$T/out"
[ "$(grep -c 'time gap' "$T/err")" -eq 8 ] && echo "ok   energy-gap-csv-once-per-series" \
    || { echo "FAIL energy-gap-csv-once-per-series"; cat "$T/err"; fail=1; }
check energy-counter-implausible 0 "$PFI" ingest --dry-run --interval 1 --telemetry "$E/dcgmi_counter_low.txt"
grep_out energy-counter-implausible-msg "energy: 2400.000 J (power-trapezoid; the energy counter disagrees with the measured power (GPU 0: 30 W from the counter, 300 W measured): not used)" "$T/out"
# Every segment holds one sample: energy unknown; stored as NULL: empty in CSV, null in JSON.
check energy-unknown 0 "$PFI" ingest --db "$T/e.db" --group ge --cap 500 --telemetry "$E/backwards.csv"
grep_out energy-unknown-report "energy: unavailable (gpu0 has no two consecutive power samples to integrate)" "$T/out"
if grep -q "0.000 J" "$T/out"; then echo "FAIL energy-unknown-not-0"; fail=1; else echo "ok   energy-unknown-not-0"; fi
check energy-unknown-csv 0 "$PFI" runs --db "$T/e.db" --format csv
grep_out energy-unknown-csv-empty "^ge,.*,power_w,,,[0-9]*,[0-9]*$" "$T/out"
check energy-unknown-json 0 "$PFI" runs --db "$T/e.db" --format json
grep_out energy-unknown-json-null '"energy_j": *null' "$T/out"

# A missing power value makes its timestamp incomplete, with one GPU as with eight, in every
# reader: dmon '-', nvidia-smi CSV '[N/A]', dcgmi 'N/A' (the rest: tests/test_reduce.c).
printf '# gpu    pwr\n# Idx      W\n    0    300\n    0    301\n    0      -\n    0    303\n    0    304\n' >"$T/dmon1.txt"
printf 'timestamp, index, power.draw [W]\n2025/01/01 00:00:00.000, 0, 300.00 W\n2025/01/01 00:00:01.000, 0, 301.00 W\n2025/01/01 00:00:02.000, 0, [N/A]\n2025/01/01 00:00:03.000, 0, 303.00 W\n2025/01/01 00:00:04.000, 0, 304.00 W\n' >"$T/smi1.csv"
printf '#Entity   POWER\nID\nGPU 0     300.000\nGPU 0     301.000\nGPU 0     N/A\nGPU 0     303.000\nGPU 0     304.000\n' >"$T/dcgmi1.txt"
for f in dmon1.txt smi1.csv dcgmi1.txt; do
    check "missing-incomplete-$f" 0 "$PFI" ingest --dry-run --interval 1 --telemetry "$T/$f"
    grep_out "missing-incomplete-$f-count" "of 4 complete timestamps; 1 incomplete left out; grid 1 s" "$T/out"
    grep_out "missing-incomplete-$f-flag" "^flags:.* incomplete" "$T/out"
done

# The grid when one GPU has a single row: the other GPU's 2 s step, said in a note; with no
# step to measure at all, 1 s assumed and said; --interval used as given, nothing said.
printf 'timestamp, index, power.draw [W]\n2025/01/01 00:00:00.000, 0, 300 W\n2025/01/01 00:00:00.000, 1, 200 W\n2025/01/01 00:00:02.000, 1, 200 W\n2025/01/01 00:00:04.000, 1, 200 W\n' >"$T/grid.csv"
check grid-single-row 0 "$PFI" ingest --dry-run --telemetry "$T/grid.csv"
grep_out grid-single-row-step "1 complete timestamps; 2 incomplete left out; grid 2 s)" "$T/out"
grep_out grid-single-row-note "^pfi: note: gpu0 has no two consecutive power_w samples: grid 2 s, the median sampling step of gpu1$" "$T/err"
check grid-interval 0 "$PFI" ingest --dry-run --interval 4 --telemetry "$T/grid.csv"
grep_out grid-interval-step "grid 4 s)" "$T/out"
if grep -q "grid" "$T/err"; then echo "FAIL grid-interval-no-note"; cat "$T/err"; fail=1; else echo "ok   grid-interval-no-note"; fi
head -3 "$T/grid.csv" >"$T/grid1.csv"
check grid-nothing-to-measure 0 "$PFI" ingest --dry-run --telemetry "$T/grid1.csv"
grep_out grid-nothing-to-measure-note "grid 1 s assumed (--interval or --align sets it)" "$T/err"

# An INVALID run (1 of --gpus 8 GPUs seen: gpu-count) never replaces a valid run at its cap:
# refused, exit 1, the valid run kept; --replace replaces it; invalid over invalid is stored.
"$PFI" sweep --caps 700,600,500 --db "$T/inv.db" --group demo --emulate alpha=0.6 >/dev/null 2>&1
printf 'timestamp, index, power.draw [W]\n2024/01/01 00:00:00.000, 0, 300 W\n2024/01/01 00:00:01.000, 0, 300 W\n' >"$T/one_gpu.csv"
check invalid-refused 1 "$PFI" ingest --db "$T/inv.db" --group demo --gpus 8 --cap 700 --telemetry "$T/one_gpu.csv"
grep_out invalid-refused-msg "group 'demo' cap 700 W: .* already holds a valid run at this cap; this run is INVALID for PFI and was not stored .*--replace" "$T/err"
check invalid-refused-runs 0 "$PFI" runs --db "$T/inv.db"
grep_out invalid-refused-kept "^demo .* 700 .* 0\$" "$T/out"
check invalid-other-cap 0 "$PFI" ingest --db "$T/inv.db" --group demo --gpus 8 --cap 650 --telemetry "$T/one_gpu.csv"
check invalid-over-invalid 0 "$PFI" ingest --db "$T/inv.db" --group demo --gpus 8 --cap 650 --telemetry "$T/one_gpu.csv"
grep_out invalid-over-invalid-msg "replaced the earlier run at this cap" "$T/out"
check invalid-replace 0 "$PFI" ingest --db "$T/inv.db" --group demo --gpus 8 --cap 700 --replace --telemetry "$T/one_gpu.csv"
grep_out invalid-replace-msg "replaced the earlier run at this cap" "$T/out"
check invalid-replace-runs 0 "$PFI" runs --db "$T/inv.db"
grep_out invalid-replace-flag "^demo .* 700 .* 144$" "$T/out"
# One odd power cell between two good ones: 1e308 W is out of range (not a DCGM blank, whose
# FP64 codes are 2^47 .. 2^47 + 15); NaN and -nan are both missing, counted, no "not a number"
# note; a negative power is said to be refused.
odd() { # NAME CELL
    printf 'timestamp, index, power.draw [W]\n2024/01/01 00:00:00.000, 0, 300 W\n2024/01/01 00:00:01.000, 0, %s\n2024/01/01 00:00:02.000, 0, 300 W\n' "$2" >"$T/$1.csv"
    check "odd-$1" 0 "$PFI" ingest --dry-run --telemetry "$T/$1.csv"
}
odd huge "1e308 W"
grep_out odd-huge-range "huge.csv:3: power_w: gpu0: 1 of 3 power_w samples out of range (max seen 1e+308 on that line" "$T/err"
if grep -q "DCGM" "$T/err"; then echo "FAIL odd-huge-not-blank"; cat "$T/err"; fail=1; else echo "ok   odd-huge-not-blank"; fi
odd nan "NaN W"
grep_out odd-nan-missing "power_w not available (1 of 3 samples missing)" "$T/err"
grep_out odd-nan-noted "'NaN W' is not a number" "$T/err"
odd mnan "-nan W"
grep_out odd-mnan-missing "power_w not available (1 of 3 samples missing)" "$T/err"
# NaN and -nan alike: missing, and noted as not a number as inf is (never silently)
grep_out odd-mnan-alike "'-nan W' is not a number" "$T/err"
odd neg "-5 W"
grep_out odd-neg "1 of 3 power_w samples negative (largest -5): negative values are refused" "$T/err"
# A Prometheus scrape's NaN / +Inf sample: missing, and its series' first one named by
# file:line (the "not available" count has no line; an out-of-range value's note has one)
{ echo '# TYPE DCGM_FI_DEV_POWER_USAGE gauge'
  echo 'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-0003-1",Hostname="node3"} 300'
  echo 'DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-0003-2",Hostname="node3"} NaN'
  echo 'DCGM_FI_DEV_POWER_USAGE{gpu="2",UUID="GPU-0003-3",Hostname="node3"} +Inf'; } >"$T/nan1.prom"
{ echo 'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-0003-1",Hostname="node3"} 300'
  echo 'DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-0003-2",Hostname="node3"} NaN'
  echo 'DCGM_FI_DEV_POWER_USAGE{gpu="2",UUID="GPU-0003-3",Hostname="node3"} 290'; } >"$T/nan2.prom"
check prom-nan 1 "$PFI" ingest --dry-run --telemetry "$T/nan1.prom" --telemetry "$T/nan2.prom"
grep_out prom-nan-line "nan1.prom:3: node3/GPU-0003-2: power_w is 'NaN': a missing sample (the series' first" "$T/err"
grep_out prom-inf-line "nan1.prom:4: node3/GPU-0003-3: power_w is '+Inf': a missing sample (the series' first" "$T/err"
grep_out prom-nan-count "node3/GPU-0003-2: power_w not available (2 of 2 samples missing)" "$T/err"
grep_out prom-inf-count "node3/GPU-0003-3: power_w not available (1 of 2 samples missing)" "$T/err"
if grep -q "nan2.prom:2: node3/GPU-0003-2" "$T/err"; then echo "FAIL prom-nan-once"; fail=1; else echo "ok   prom-nan-once"; fi
# --interval on a timestamped CSV: the timestamps are used, and the summary says so
check interval-timestamped 0 "$PFI" ingest --dry-run --interval 5 --telemetry "$T/nan.csv"
grep_out interval-timestamped-said "times are the file's timestamps: --interval 5 s is not used for times" "$T/out"
if [ -n "$CASES" ] && [ -d "$CASES" ]; then
    # A GPU of the job missing part of the run: the energy says it is partial.
    check case04-energy-partial 0 "$PFI" ingest --dry-run --telemetry "$CASES/case-04/dmon_repeated_header.txt"
    grep_out case04-energy-partial-label "energy: 1791.500 J (power-trapezoid; partial: gpu1 covers 2 of 4 s)" "$T/out"
    # One sample per GPU: energy unavailable, never 0 J.
    check case02-energy-unknown 0 "$PFI" ingest --dry-run --telemetry "$CASES/case-02/units.csv"
    grep_out case02-energy-unknown-msg "energy: unavailable (" "$T/out"
    # case-09: header + error, no data: failure, error surfaced verbatim, nothing stored.
    check case09-no-telemetry 1 "$PFI" ingest --db "$T/c.db" --group g --cap 700 \
        --telemetry "$CASES/case-09/dcgmi_watch_error_module.txt" --interval 1
    grep_out case09-verbatim "Error setting watches. Result: -33" "$T/err"
    [ ! -e "$T/c.db" ] && echo "ok   case09-nothing-stored" || { echo "FAIL case09-nothing-stored"; fail=1; }
    # case-09 item 5: a batch with bad files between good ones: every file is read and each
    # failure named; exit 1 at the end; nothing stored.
    check case09-batch 1 "$PFI" ingest --db "$T/c.db" --group g --cap 700 --interval 1 \
        --telemetry "$CASES/case-09/dcgmi_watch_error_prof.txt" \
        --telemetry "$T/dc_700.txt" \
        --telemetry "$CASES/case-09/dcgmi_watch_error_module.txt"
    grep_out case09-batch-first "dcgmi_watch_error_prof.txt: no telemetry" "$T/err"
    grep_out case09-batch-last "dcgmi_watch_error_module.txt: no telemetry" "$T/err"
    grep_out case09-batch-count "2 of 3 telemetry file(s) failed" "$T/err"
    grep_out case09-remedy "re-run without them to get POWER/TOTEC" "$T/err"
    [ ! -e "$T/c.db" ] && echo "ok   case09-batch-nothing-stored" || { echo "FAIL case09-batch-nothing-stored"; fail=1; }
    # case-01 (old driver): no power data -> clear error, non-zero exit, never 0 W.
    check case01-no-power 1 "$PFI" ingest --dry-run --telemetry "$CASES/case-01/old_driver_not_supported.csv"
    grep_out case01-message "no power samples" "$T/err"
    # case-03: lost GPU -> stored but flagged invalid; analyze leaves it out.
    check case03-lost 0 "$PFI" ingest --dry-run --telemetry "$CASES/case-03/query_loop.csv"
    grep_out case03-flag "gpu-lost" "$T/out"
    grep_out case03-invalid "INVALID for PFI" "$T/out"
    # one complete timestamp: the standard error is undefined, and said so (never "nan")
    grep_out case03-se-undefined "se undefined" "$T/out"
    if grep -qiw "nan" "$T/out"; then echo "FAIL case03-no-nan: a NaN printed"; cat "$T/out"; fail=1; else echo "ok   case03-no-nan"; fi
    # case-21: the nvidia-smi -q -x reader from the command (libxml2 opened on first use).
    check case21-xml 0 "$PFI" ingest --dry-run --telemetry "$CASES/case-21/nvsmi_xml_power_570.xml"
    grep_out case21-xml-format "format nvidia-smi-xml" "$T/out"
    grep_out case21-xml-power "power_avg_w 1 valid / 0 missing / 0 out of range, mean 402.1700 W" "$T/out"
    # Without a loadable libxml2 (hidden here behind an empty file, in a private mount
    # namespace): a clear error naming the library, exit 1; the other readers still work.
    xml_so=$(ldconfig -p 2>/dev/null | awk '/libxml2\.so\.2 /{print $NF; exit}')
    if [ -n "$xml_so" ] && unshare -rm true 2>/dev/null; then
        check case21-xml-nolib 1 unshare -rm sh -c 'mount --bind /dev/null "$(readlink -f "$1")" &&
            exec "$2" ingest --dry-run --telemetry "$3"' sh "$xml_so" "$PFI" \
            "$CASES/case-21/nvsmi_xml_power_570.xml"
        grep_out case21-xml-nolib-msg "XML reader needs libxml2 (libxml2.so.2), which cannot be loaded" "$T/err"
        check case21-xml-nolib-csv 0 unshare -rm sh -c 'mount --bind /dev/null "$(readlink -f "$1")" &&
            exec "$2" ingest --dry-run --telemetry "$3"' sh "$xml_so" "$PFI" \
            "$CASES/case-03/query_loop.csv"
    else
        echo "skip case21-xml-nolib (no libxml2 in ldconfig, or no unprivileged mount namespace)"
    fi
    # case-02: noheader CSV without --fields -> refused with the remedy.
    check case02-noheader 1 "$PFI" ingest --dry-run --format nvidia-smi-csv \
        --telemetry "$CASES/case-02/noheader_nounits.csv"
    grep_out case02-msg "CSV has no header; pass the --query-gpu field list" "$T/err"
    # case-03's kernel log given as telemetry: no telemetry format, not a header-less CSV
    check case03-dmesg-as-telemetry 1 "$PFI" ingest --dry-run \
        --telemetry "$CASES/case-03/dmesg_excerpt.txt"
    grep_out case03-dmesg-msg "dmesg_excerpt.txt: telemetry format not recognised: a log (first line" "$T/err"
    if grep -q "no header" "$T/err"; then echo "FAIL case03-dmesg-no-csv"; fail=1; else echo "ok   case03-dmesg-no-csv"; fi
    # case-25: same numbers under a decimal-comma locale.
    if locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$'; then
        LC_ALL=de_DE.UTF-8 "$PFI" ingest --dry-run --telemetry "$CASES/case-25/query.csv" >"$T/de" 2>&1
        LC_ALL=C "$PFI" ingest --dry-run --telemetry "$CASES/case-25/query.csv" >"$T/c" 2>&1
        cmp -s "$T/de" "$T/c" && echo "ok   case25-locale" || { echo "FAIL case25-locale"; fail=1; }
        grep_out case25-mean "mean 279.1600 W" "$T/c"
    else
        echo "skip case25-locale (no de_DE.UTF-8 locale)"
    fi
fi
exit $fail
