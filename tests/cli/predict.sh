#!/bin/sh
# pfi predict end to end: a model fitted on the synthetic library, applied to (a) telemetry
# files written here with known DRAM / copy activity (dcgmi dmon, nvidia-smi CSV), read and
# reduced as `pfi ingest` does, and (b) a run store built with `pfi ingest`. Every estimate
# is checked against the model evaluated by hand on the known features (feature table:
# dram_active -> dcgm_dram_active, mem_copy_util_pct / 100 -> dcgm_mem_copy_util).
# Usage: predict.sh PFI_BINARY
set -u
PFI=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
. "$(dirname "$0")/check.sh" # check, grep_out
grep_file() { # grep_file NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "ok   $1"; else echo "FAIL $1: no '$2' in"; cat "$3"; fail=1; fi
}
# estimate NAME ROW FEATURE_VALUE: row ROW (1-based, after the header) of the last CSV output
# must hold the model evaluated by hand at FEATURE_VALUE (the DRAM copy product), to 1e-12.
estimate() {
    python3 - "$T/model.json" "$T/out" "$2" "$3" <<'PY' && echo "ok   $1" || { echo "FAIL $1"; cat "$T/out"; fail=1; }
import csv, json, sys
m = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
row, x = rows[int(sys.argv[3]) - 1], float(sys.argv[4])
assert m["features"] == ["dcgm_dram_active*dcgm_mem_copy_util"], m["features"]
c = m["coefficients"]
want = c["intercept"] + c["dcgm_dram_active*dcgm_mem_copy_util"] * x
got = float(row["pfi_estimate"])
assert abs(got - want) <= 1e-12 * abs(want), (got, want)
assert float(row["pi_lo"]) < got < float(row["pi_hi"]), row
lo, hi = m["training_range"]["dcgm_dram_active*dcgm_mem_copy_util"]
assert row["outside_training_range"] == ("0" if lo <= x <= hi else "1"), row
print(f"     {row['group']}: x = {x}, estimate {got:.6f} = {c['intercept']:.6f} + "
      f"{c['dcgm_dram_active*dcgm_mem_copy_util']:.6f} x")
PY
}

check generate 0 "$PFI" library generate --quiet "$T/lib"
check fit 0 "$PFI" fit "$T/lib" -m "$T/model.json"
check fit-tensor 0 "$PFI" fit "$T/lib" --features dcgm_tensor_active -m "$T/tensor.json"

# (a) dcgmi dmon, 2 GPUs, no timestamps (--interval 5): GPU 0 DRAM active 0.40 and copy
# utilisation 20 %, GPU 1 0.60 and 40 %; the job means are 0.5 and 30 % = 0.30, so the DRAM
# copy product is 0.5 x 0.30 = 0.15 (product of the means, not the mean of the products). The
# first sample of each GPU is a warm-up spike (0.95, 95 %), left out by --warmup 5.
{
    printf '#Entity   POWER        MCUTL        DRAMA\nID\n'
    printf 'GPU 0     300.0        95           0.950\nGPU 1     300.0        95           0.950\n'
    for i in 1 2 3 4 5 6 7 8 9; do
        printf 'GPU 0     %d.0        20           0.400\n' $((600 + i))
        printf 'GPU 1     %d.0        40           0.600\n' $((610 + i))
    done
} > "$T/dcgmi.txt"
check telemetry-dcgmi 0 "$PFI" predict -m "$T/model.json" --telemetry "$T/dcgmi.txt" \
    --interval 5 --warmup 5 --format csv
estimate telemetry-dcgmi-value 1 0.15
# Without the warm-up the spike is averaged in: GPU means (0.95 + 9 x 0.4) / 10 = 0.455,
# (0.95 + 9 x 0.6) / 10 = 0.635 -> 0.545; copy (95 + 9 x 20) / 10 = 27.5 %, (95 + 9 x 40) / 10
# = 45.5 % -> 36.5 % -> 0.545 x 0.365.
check telemetry-no-warmup 0 "$PFI" predict -m "$T/model.json" --telemetry "$T/dcgmi.txt" \
    --interval 5 --format csv
estimate telemetry-no-warmup-value 1 0.198925
# The table names the mapped feature value it used.
check telemetry-table 0 "$PFI" predict -m "$T/model.json" --telemetry "$T/dcgmi.txt" \
    --interval 5 --warmup 5 --telemetry-format dcgmi-dmon
grep_file telemetry-table-features "dcgm_dram_active\*dcgm_mem_copy_util = 0.15$" "$T/out"

# nvidia-smi CSV with timestamps: copy utilisation (percent) but no DRAM active (a DCGM
# profiling field): the model's product cannot be formed -> a clear message, exit 1.
{
    printf 'timestamp, index, power.draw [W], utilization.memory [%%]\n'
    for s in 00 05 10 15; do
        printf '2025/05/14 10:00:%s.000, 0, 650.00 W, 30 %%\n' "$s"
    done
} > "$T/smi.csv"
check telemetry-lacks-feature 1 "$PFI" predict -m "$T/model.json" --telemetry "$T/smi.csv"
grep_file telemetry-lacks-message "needs feature 'dcgm_dram_active\*dcgm_mem_copy_util', which is not in the telemetry" "$T/err"
grep_file telemetry-lacks-field "'dcgm_dram_active' comes from telemetry field dram_active (DCGM field 1005" "$T/err"
check telemetry-lacks-tensor 1 "$PFI" predict -m "$T/tensor.json" --telemetry "$T/dcgmi.txt" --interval 5
grep_file telemetry-lacks-tensor-message "'dcgm_tensor_active' comes from telemetry field tensor_active (DCGM field 1004" "$T/err"
# A model on nvidia-smi's copy utilisation alone works from that file: 30 % -> 0.30.
check fit-copy 0 "$PFI" fit "$T/lib" --features dcgm_mem_copy_util -m "$T/copy.json"
check telemetry-smi 0 "$PFI" predict -m "$T/copy.json" --telemetry "$T/smi.csv" --format json
python3 - "$T/copy.json" "$T/out" <<'PY' && echo "ok   telemetry-smi-value" || { echo "FAIL telemetry-smi-value"; cat "$T/out"; fail=1; }
import json, sys
c = json.load(open(sys.argv[1]))["coefficients"]
got = json.load(open(sys.argv[2]))[0]["pfi_estimate"]
want = c["intercept"] + c["dcgm_mem_copy_util"] * 0.30
assert abs(got - want) <= 1e-12 * abs(want), (got, want)
PY
check telemetry-missing-file 1 "$PFI" predict -m "$T/model.json" --telemetry "$T/nope.txt"
check telemetry-format-confusion 2 "$PFI" predict -m "$T/model.json" --telemetry "$T/dcgmi.txt" --format dcgmi-dmon
grep_file telemetry-format-hint "telemetry-format" "$T/err"
check two-sources 2 "$PFI" predict -m "$T/model.json" --telemetry "$T/dcgmi.txt" dcgm_dram_active=0.5

# (b) a run store built with pfi ingest: group g1 swept at 700/500/400 W, g2 at 700/500 W,
# g3 one run (no sweep). Reference runs (700 W) carry the known features; the capped runs
# carry other values (0.9 / 90 %), so a prediction from the wrong run would show.
run() { # run FILE POWER_PER_GPU DRAMA MCUTL_PCT
    {
        printf '#Entity   POWER        MCUTL        DRAMA\nID\n'
        for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
            printf 'GPU 0     %s        %s           %s\n' "$2" "$4" "$3"
            printf 'GPU 1     %s        %s           %s\n' "$2" "$4" "$3"
        done
    } > "$1"
}
log() { # log FILE STEP_MS: a Megatron-LM log, 256 samples per step
    k=1
    while [ $k -le 30 ]; do
        printf ' [2025-05-14 10:%02d:00] iteration %8d/    1000 | consumed samples: %10d | elapsed time per iteration (ms): %s | global batch size:   256 | lm loss: 2.5E+00 | number of skipped iterations:   0 | number of nan iterations:   0 |\n' \
            "$k" $((k * 10)) $((k * 2560)) "$2"
        k=$((k + 1))
    done > "$1"
}
ingest() { # ingest GROUP CAP POWER DRAMA MCUTL STEP_MS
    run "$T/$1-$2.txt" "$3" "$4" "$5"
    log "$T/$1-$2.log" "$6"
    check "ingest-$1-$2" 0 "$PFI" ingest -q --db "$T/pfi.db" --group "$1" --class dense \
        --gpus 2 --cap "$2" --interval 5 --telemetry "$T/$1-$2.txt" --throughput-log "$T/$1-$2.log"
}
ingest g1 700 650 0.50 30 1000
ingest g1 500 480 0.90 90 1080
ingest g1 400 390 0.90 90 1200
ingest g2 700 640 0.30 20 1000
ingest g2 500 480 0.90 90 1250
ingest g3 700 600 0.40 25 1000
check db 0 "$PFI" predict -m "$T/model.json" --db "$T/pfi.db" --format csv
cp "$T/out" "$T/db.csv"
estimate db-g1 1 0.15
estimate db-g2 2 0.06
estimate db-g3 3 0.1
# The measured PFI next to each estimate is analyze's PFI of the same stored group.
check db-analyze 0 "$PFI" analyze --db "$T/pfi.db" --format csv
python3 - "$T/db.csv" "$T/out" <<'PY' && echo "ok   db-measured" || { echo "FAIL db-measured"; cat "$T/db.csv" "$T/out"; fail=1; }
import csv, sys
pred = {r["group"]: r for r in csv.DictReader(open(sys.argv[1]))}
an = list(csv.DictReader(open(sys.argv[2])))
key = "pfi_ratio" if "pfi_ratio" in an[0] else "pfi"
gcol = "group" if "group" in an[0] else list(an[0])[0]
for r in an:
    g = r[gcol]
    if r[key] == "":
        assert pred[g]["pfi_measured"] == "", (g, pred[g])
    else:
        assert abs(float(pred[g]["pfi_measured"]) - float(r[key])) < 1e-12, (g, r, pred[g])
assert pred["g1"]["pfi_measured"] != "" and pred["g2"]["pfi_measured"] != ""
assert pred["g3"]["pfi_measured"] == ""  # one run: no sweep, no measured PFI
PY
check db-group 0 "$PFI" predict -m "$T/model.json" --db "$T/pfi.db" --group g2 --format csv
estimate db-group-g2 1 0.06
[ "$(wc -l < "$T/out")" -eq 2 ] && echo "ok   db-group-one-row" || { echo "FAIL db-group-one-row"; fail=1; }
check db-table 0 "$PFI" predict -m "$T/model.json" --db "$T/pfi.db"
grep_file db-table-g3 "^  g3 .* undefined" "$T/out"
check db-unknown-group 1 "$PFI" predict -m "$T/model.json" --db "$T/pfi.db" --group nope
grep_file db-unknown-group-message "no runs in group nope" "$T/err"
check db-lacks-feature 1 "$PFI" predict -m "$T/tensor.json" --db "$T/pfi.db"
grep_file db-lacks-message "which is not in the stored reference runs" "$T/err"
check db-missing 1 "$PFI" predict -m "$T/model.json" --db "$T/nope.db"
check group-without-db 2 "$PFI" predict -m "$T/model.json" --group g1 dcgm_dram_active=1
# The store is also a groups INPUT: fit on it, predict --groups on it.
check groups-db 0 "$PFI" predict -m "$T/model.json" --groups "$T/pfi.db" --format csv
estimate groups-db-g1 1 0.15
check fit-db 0 "$PFI" fit "$T/pfi.db"
grep_file fit-db-groups "on 3 sweep groups" "$T/out"
# An empty or unrecognised telemetry file fails the prediction, as it fails an ingest.
: >"$T/empty.txt"
check telemetry-empty 1 "$PFI" predict -m "$T/model.json" --telemetry "$T/empty.txt"
grep_out telemetry-empty-says "empty.txt" "$T/err"
printf '# Notes\n\nnot telemetry\n' >"$T/notes.md"
check telemetry-unrecognised 1 "$PFI" predict -m "$T/model.json" --telemetry "$T/notes.md"
grep_out telemetry-unrecognised-says "format not recognised" "$T/err"
# a usage error names the verb, as every other one (src/cli/opterr.h)
check feature-no-value 2 "$PFI" predict -m "$T/model.json" foo
grep_out feature-no-value-says "^pfi: predict: expected FEATURE=VALUE with a number, got 'foo'$" "$T/err"
exit $fail
