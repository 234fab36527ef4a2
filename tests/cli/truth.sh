#!/bin/sh
# Telemetry you can trust (issue 14, DESIGN §9): missing values in every spelling, units,
# confounders (cap-lost, throttled), time zones, MIG, Prometheus API results. Inputs are made
# here in the real tools' layouts; each check asserts numbers (job power, GPU and sample
# counts, flags), worked out by hand in the comments.
# Usage: truth.sh PFI_BINARY SOURCE_DIR      (ctest cli_truth)
set -u
PFI=$1
SRC=$2
fail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-truth.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
job_power() { sed -n 's/^power: [a-z_]* job \([0-9.]*\) W.*/\1/p' "$1"; }
near() {
    if awk -v a="$2" -v b="$3" -v t="$4" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= t) }'; then
        echo "ok   $1 ($2 ~ $3)"
    else
        echo "FAIL $1: got '$2', want $3 +- $4"; fail=1
    fi
}

# ---- missing values ----
# dcgmi: GPU 1's POWER is DCGM_FP64_NOT_SUPPORTED (2^47 + 2) in 5 rows and a string blank in
# one; its TOTEC is DCGM_INT32_NOT_PERMISSIONED (0x7ffffff3) 5 times and DCGM_INT64 blank once;
# SMACT is exactly 0 on both GPUs while GPUTL says 95 %: the profiler was not collecting.
{ echo "#Entity   POWER   GPUTL  SMACT  TOTEC"; echo "ID"
  for i in 1 2 3 4 5; do
      echo "GPU 0   300.5  95  0.000  $((i * 300000))"
      echo "GPU 1   140737488355330  96  0.000  2147483635"
  done
  echo "GPU 1   <<<NOT_SUPPORTED>>>  96  0.000  9223372036854775807"; } >"$T/blank.dcgmi"
check blanks 1 "$PFI" ingest --dry-run --telemetry "$T/blank.dcgmi"
grep_out blanks-power "GPU 1: power_w not available (6 of 6 samples missing; DCGM: 5 not supported)" "$T/err"
grep_out blanks-energy "GPU 1: energy_mj not available (6 of 6 samples missing; DCGM: 1 blank, 5 not permissioned)" "$T/err"
grep_out blanks-zero-prof "sm_active: exactly 0 on every GPU for the whole run (11 samples) while the GPUs were 96 % busy" "$T/err"
grep_out blanks-flags "flags: no-power incomplete" "$T/out"
# the same zeros on an idle GPU (GPUTL 0) are a real 0: kept
sed 's/  9[56]  /  0  /' "$T/blank.dcgmi" >"$T/idle.dcgmi"
check blanks-idle 1 "$PFI" ingest --dry-run --telemetry "$T/idle.dcgmi"
if grep -q "exactly 0 on every GPU" "$T/err"; then echo "FAIL blanks-idle-kept"; fail=1; else echo "ok   blanks-idle-kept"; fi
# every nvidia-smi / DCGM spelling of missing in a CSV is missing, never 0 or a parse error:
# gpu0 has 6 rows, 4 of them valid (300, 310, 320, 330): mean 315 W; the others missing
{ echo "timestamp, index, power.draw [W]"
  n=0
  for v in "300.00 W" "[N/A]" "310.00 W" "N/A" "320.00 W" "[Not Supported]" "<<<NULL>>>" "ERR!" "330.00 W" "[Unknown Error]"; do
      printf '2026/01/01 00:00:%02d.000, 0, %s\n' "$n" "$v"; n=$((n + 1))
  done; } >"$T/spell.csv"
check spellings 0 "$PFI" ingest --dry-run --telemetry "$T/spell.csv"
grep_out spellings-count "gpu0: 10 rows, power_w 4 valid / 6 missing / 0 out of range, mean 315.0000 W" "$T/out"
if grep -q "not a number" "$T/err"; then echo "FAIL spellings-parsed"; cat "$T/err"; fail=1; else echo "ok   spellings-parsed"; fi

# ---- dmon units row ----
# mW honoured (250000 mW = 250 W), a temperature in F refused (never read as C)
printf '# gpu    pwr  gtemp  sm\n# Idx     mW      F   %%\n    0  250000     60  90\n    1  260000     61  91\n    0  252000     60  90\n    1  262000     61  91\n' >"$T/dmon_mw.txt"
check dmon-mw 0 "$PFI" ingest --dry-run --q 1 --telemetry "$T/dmon_mw.txt"
# job: (250 + 260 + 252 + 262) / 2 = 512 W
near dmon-mw-power "$(job_power "$T/out")" 512 0.0001
grep_out dmon-f-refused "column gtemp: unit 'F' .*column refused" "$T/err"
printf '# gpu    pwr\n# Idx     kW\n    0  0.3\n    0  0.31\n' >"$T/dmon_kw.txt"
check dmon-kw 0 "$PFI" ingest --dry-run --q 1 --telemetry "$T/dmon_kw.txt"
near dmon-kw-power "$(job_power "$T/out")" 305 0.0001
printf '# gpu    pwr\n# Idx     BTU\n    0  3\n    0  3\n' >"$T/dmon_btu.txt"
check dmon-btu 1 "$PFI" ingest --dry-run --telemetry "$T/dmon_btu.txt"
grep_out dmon-btu-refused "column pwr: unit 'BTU'" "$T/err"

# ---- pfi predict refuses values outside a feature's physical range, and unknown names ----
"$PFI" library generate --quiet "$T/lib" >/dev/null 2>&1
"$PFI" fit "$T/lib" -m "$T/model.json" >/dev/null 2>&1
check predict-ok 0 "$PFI" predict -m "$T/model.json" dcgm_dram_active=0.4 dcgm_mem_copy_util=0.3
check predict-percent 2 "$PFI" predict -m "$T/model.json" dcgm_dram_active=40 dcgm_mem_copy_util=0.3
grep_out predict-percent-said "dcgm_dram_active = 40 is outside its physical range \[0, 1\]" "$T/err"
check predict-negative 2 "$PFI" predict -m "$T/model.json" dcgm_dram_active=-0.1 dcgm_mem_copy_util=0.3
check predict-unknown 2 "$PFI" predict -m "$T/model.json" dcgm_dram_activ=0.4 dcgm_mem_copy_util=0.3
grep_out predict-unknown-said "unknown feature 'dcgm_dram_activ'" "$T/err"
printf 'group,job_class,pfi,dcgm_dram_active,dcgm_mem_copy_util\ng1,dense,1.5,0.4,30\n' >"$T/g.csv"
check predict-groups-range 1 "$PFI" predict -m "$T/model.json" --groups "$T/g.csv"
grep_out predict-groups-said "group 'g1'.* outside its physical range" "$T/err"

# ---- cap-lost and throttled ----
# 2 GPUs x 20 s: gpu0 290 W, gpu1 291 W at a 300 W cap; at s = 4, 5 gpu0 is thermally
# throttled (HW thermal 0x40) and draws 100 W; at s = 12..15 gpu1's enforced limit is 700 W (the
# driver reverted it) and it draws 650 W. Left out: 2 throttled + 4 cap-lost of 20 timestamps;
# the steady state (q = 1) is the mean of the other 14: 290 + 291 = 581 W (with them it would
# be (14 * 581 + 2 * 391 + 4 * 940) / 20 = 633.8 W).
caps_csv() { # caps_csv LAYOUT: new (enforced.power.limit + clocks_event_reasons.active) or old
    if [ "$1" = new ]; then echo "timestamp, index, power.draw [W], enforced.power.limit [W], clocks_event_reasons.active"
    else echo "timestamp, index, power.draw [W], power.limit [W], clocks_throttle_reasons.sw_power_cap, clocks_throttle_reasons.hw_thermal_slowdown"; fi
    for s in $(seq 0 19); do for g in 0 1; do
        p=$((290 + g)); lim=300.00; r=0x0000000000000004; old="Active, Not Active"
        if [ "$g" = 1 ] && [ "$s" -ge 12 ] && [ "$s" -lt 16 ]; then lim=700.00; p=650; fi
        if [ "$g" = 0 ] && [ "$s" -ge 4 ] && [ "$s" -lt 6 ]; then r=0x0000000000000044; old="Active, Active"; p=100; fi
        if [ "$1" = new ]; then printf '2026/01/01 00:00:%02d.%03d, %d, %d.00 W, %s W, %s\n' "$s" "$g" "$g" "$p" "$lim" "$r"
        else printf '2026/01/01 00:00:%02d.%03d, %d, %d.00 W, %s W, %s\n' "$s" "$g" "$g" "$p" "$lim" "$old"; fi
    done; done
}
for layout in new old; do
    caps_csv $layout >"$T/caps_$layout.csv"
    check "caps-$layout" 0 "$PFI" ingest --dry-run --q 1 --cap 300 --telemetry "$T/caps_$layout.csv"
    near "caps-$layout-power" "$(job_power "$T/out")" 581 0.0001
    grep_out "caps-$layout-counts" "steady state: 6 of 20 complete timestamps left out (4 cap-lost: .*; 2 throttled" "$T/out"
    grep_out "caps-$layout-flags" "flags: .*cap-lost throttled" "$T/out"
done
# dcgmi dmon -e 155,160,112 (POWER, PMLMT, DVCCTR): the same run, nominal time
{ echo "#Entity   POWER   PMLMT   DVCCTR"; echo "ID"
  for s in $(seq 0 19); do for g in 0 1; do
      p=$((290 + g)); lim=300; r=4
      if [ "$g" = 1 ] && [ "$s" -ge 12 ] && [ "$s" -lt 16 ]; then lim=700; p=650; fi
      if [ "$g" = 0 ] && [ "$s" -ge 4 ] && [ "$s" -lt 6 ]; then r=68; p=100; fi
      echo "GPU $g   $p.000   $lim.000   $r"
  done; done; } >"$T/caps.dcgmi"
check caps-dcgmi 0 "$PFI" ingest --dry-run --q 1 --cap 300 --telemetry "$T/caps.dcgmi"
near caps-dcgmi-power "$(job_power "$T/out")" 581 0.0001
grep_out caps-dcgmi-flags "flags: .*cap-lost throttled" "$T/out"
# the cap the run claims (250 W) never held: every timestamp left out, no run power, INVALID
check caps-never 0 "$PFI" ingest --dry-run --q 1 --cap 250 --telemetry "$T/caps_new.csv"
grep_out caps-never-flags "flags: .*cap-lost throttled cap-short" "$T/out"
grep_out caps-never-invalid "this run is INVALID for PFI" "$T/out"
grep_out caps-never-nopower "^power: power_w: none (" "$T/out"
# sync boost (0x10) throttles too; idle (0x1) and application clocks (0x2) do not
sed 's/0x0000000000000044/0x0000000000000013/' "$T/caps_new.csv" >"$T/caps_sync.csv"
check caps-sync 0 "$PFI" ingest --dry-run --q 1 --cap 300 --telemetry "$T/caps_sync.csv"
grep_out caps-sync-counts "2 throttled" "$T/out"
sed 's/0x0000000000000044/0x0000000000000003/' "$T/caps_new.csv" >"$T/caps_idle.csv"
check caps-idle 0 "$PFI" ingest --dry-run --q 1 --cap 300 --telemetry "$T/caps_idle.csv"
grep_out caps-idle-counts "4 of 20 complete timestamps left out (4 cap-lost: .*; 0 throttled" "$T/out"

# dcgm-exporter's names for the same fields: 4 scrapes of one GPU at a 300 W cap drawing 290,
# 291, 292, 293 W; in the third DCGM_FI_DEV_ENFORCED_POWER_LIMIT says 700 W (cap-lost), in the
# fourth DCGM_FI_DEV_CLOCKS_EVENT_REASONS says HW thermal slowdown (0x40 = 64; SW power cap 0x4
# elsewhere): the steady state (q = 1) is (290 + 291) / 2 = 290.5 W
for s in 0 1 2 3; do
    lim=300; r=4; [ $s = 2 ] && lim=700; [ $s = 3 ] && r=64
    { echo "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-c0\",Hostname=\"h\"} 29$s"
      echo "DCGM_FI_DEV_ENFORCED_POWER_LIMIT{gpu=\"0\",UUID=\"GPU-c0\",Hostname=\"h\"} $lim"
      echo "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"0\",UUID=\"GPU-c0\",Hostname=\"h\"} $r"; } >"$T/caps$s.prom"
done
check caps-exporter 0 "$PFI" ingest --dry-run --q 1 --cap 300 --interval 15 --telemetry "$T/caps0.prom" \
    --telemetry "$T/caps1.prom" --telemetry "$T/caps2.prom" --telemetry "$T/caps3.prom"
near caps-exporter-power "$(job_power "$T/out")" 290.5 0.0001
grep_out caps-exporter-counts "steady state: 2 of 4 complete timestamps left out (1 cap-lost: .*; 1 throttled" "$T/out"

# ---- Prometheus HTTP API answers (query_range matrix, query vector) ----
# matrix: node-a's GPU 300, 310, NaN, 320 W; node-b's 200, 210, 220, 230 W every 15 s; a second
# node-b series (another instance) is a duplicate, dropped; a series without __name__ is
# skipped. Complete timestamps: 500, 520, 550 W -> mean 523.3333 W; the NaN one incomplete.
cat >"$T/range.json" <<'JSON'
{"status":"success","data":{"resultType":"matrix","result":[
{"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0","UUID":"GPU-aaaa0000-0000","Hostname":"node-a","pod":"p"},"values":[[1767268800,"300"],[1767268815,"310"],[1767268830,"NaN"],[1767268845,"320"]]},
{"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0","UUID":"GPU-bbbb0000-0000","Hostname":"node-b"},"values":[[1767268800,"200"],[1767268815,"210"],[1767268830,"220"],[1767268845,"230"]]},
{"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0","UUID":"GPU-bbbb0000-0000","Hostname":"node-b","instance":"x2"},"values":[[1767268800,"999"]]},
{"metric":{"gpu":"0","UUID":"GPU-aaaa0000-0000","Hostname":"node-a"},"values":[[1767268800,"1"]]}
]}}
JSON
check api-matrix 0 "$PFI" ingest --dry-run --q 1 --telemetry "$T/range.json"
near api-matrix-power "$(job_power "$T/out")" 523.3333 0.0001
grep_out api-matrix-format "format prometheus-api, 8 rows" "$T/out"
grep_out api-matrix-incomplete "top 3 of 3 complete timestamps; 1 incomplete" "$T/out"
grep_out api-matrix-dup "node-b/GPU-bbbb0000-0000: 1 duplicate power_w samples dropped" "$T/err"
grep_out api-matrix-noname "1 series without __name__" "$T/err"
# a raw energy counter that resets: 0 -> 4.5 MJ... (mJ), reset, 0 -> 4.5e6 mJ: 9000 J, the
# 15 s across the reset left out (partial), never a negative step
cat >"$T/reset.json" <<'JSON'
{"status":"success","data":{"resultType":"matrix","result":[
{"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0","UUID":"GPU-c0","Hostname":"n1"},"values":[[1000,"300"],[1015,"300"],[1030,"300"],[1045,"300"]]},
{"metric":{"__name__":"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION","gpu":"0","UUID":"GPU-c0","Hostname":"n1"},"values":[[1000,"0"],[1015,"4500000"],[1030,"0"],[1045,"4500000"]]}
]}}
JSON
check api-reset 0 "$PFI" ingest --dry-run --q 1 --telemetry "$T/reset.json"
grep_out api-reset-energy "energy: 9000.000 J (counter; partial" "$T/out"
# vector: a GPU whose value is +Inf is missing: no timestamp is complete
printf '{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0","UUID":"GPU-v0","Hostname":"n1"},"value":[1000.5,"301.5"]},{"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"1","UUID":"GPU-v1","Hostname":"n1"},"value":[1000.5,"+Inf"]},{"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0","UUID":"GPU-v2","Hostname":"n2"},"value":[1000.5,"299"]}]}}' >"$T/vec.json"
check api-vector 1 "$PFI" ingest --dry-run --telemetry "$T/vec.json"
grep_out api-vector-missing "n1/GPU-v1: 1 row, power_w 0 valid / 1 missing" "$T/out"
grep_out api-vector-gpus "n2/GPU-v2: 1 row, power_w 1 valid" "$T/out"
printf '{"status":"error","errorType":"bad_data","error":"parse error"}' >"$T/err.json"
check api-error 1 "$PFI" ingest --dry-run --telemetry "$T/err.json"
grep_out api-error-said "the tool reported: Prometheus: bad_data: parse error" "$T/err"

# ---- pfi's own outputs round-trip ----
# pfi probe --record (emulated GPUs): pfi ingest reads the replay CSV; the job power (q = 1) is
# the mean over the recording's timestamps of the GPUs' sum, computed here with awk
check probe-record 0 "$PFI" probe --backend emulated --emulate gpus=4 --record "$T/rec.csv" \
    --duration 5s --interval 0.5s
want_rec=$(awk -F, 'NR > 1 { s[$1 < 0 ? 0 : int($1 * 2 + 0.5)] += $3 } END { for (k in s) { t += s[k]; n++ } printf "%.4f", t / n }' "$T/rec.csv")
check probe-record-ingest 0 "$PFI" ingest --dry-run --q 1 --telemetry "$T/rec.csv"
near probe-record-power "$(job_power "$T/out")" "$want_rec" 0.01
grep_out probe-record-gpus "^  gpu3: 10 rows" "$T/out"
# its t_s column is seconds from the recording's start, not a time of day (issue 18 item 2)
grep_out probe-record-times "^  times are relative (seconds from the recording's start, its t_s column)$" "$T/out"
if grep -q "time of day" "$T/out"; then echo "FAIL probe-record-times-not-tod"; fail=1; else echo "ok   probe-record-times-not-tod"; fi
# its enforced_limit_w column is the enforced limit (the emulated GPUs' 700 W): a run that
# claims 300 W is cap-lost at all 10 timestamps (cap-short: no power); one that claims 700 W
# leaves nothing out
check probe-record-cap 0 "$PFI" ingest --dry-run --q 1 --cap 300 --telemetry "$T/rec.csv"
grep_out probe-record-caplost "steady state: 10 of 10 complete timestamps left out (10 cap-lost: .*; 0 throttled" "$T/out"
grep_out probe-record-capshort "flags: .*cap-lost cap-short" "$T/out"
check probe-record-cap-700 0 "$PFI" ingest --dry-run --q 1 --cap 700 --telemetry "$T/rec.csv"
if grep -q "cap-lost\|^steady state:" "$T/out"; then echo "FAIL probe-record-cap-held"; cat "$T/out"; fail=1; else echo "ok   probe-record-cap-held"; fi
# and its clock_event_reasons column the reasons: gpu0 held by HW thermal slowdown (0x40 = 64)
# in the first two loops leaves those 2 timestamps out, the job power the mean of the other 8
awk -F, -v OFS=, 'NR == 2 || NR == 6 { $13 = 64 } { print }' "$T/rec.csv" >"$T/rec_hot.csv"
want_hot=$(awk -F, 'NR > 1 && int($1 * 2 + 0.5) > 2 { s[int($1 * 2 + 0.5)] += $3 } END { for (k in s) { t += s[k]; n++ } printf "%.4f", t / n }' "$T/rec_hot.csv")
check probe-record-hot 0 "$PFI" ingest --dry-run --q 1 --cap 700 --telemetry "$T/rec_hot.csv"
grep_out probe-record-hot-count "steady state: 2 of 10 complete timestamps left out (0 cap-lost: .*; 2 throttled" "$T/out"
near probe-record-hot-power "$(job_power "$T/out")" "$want_hot" 0.01
# pfid's /metrics, two scrapes of an emulated node: 2 GPUs keyed (hostname, uuid)
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/token"; chmod 600 "$T/token"
PFID=$(dirname "$PFI")/pfid
if [ -x "$PFID" ] && command -v curl >/dev/null; then
    "$PFID" -b emulated --emulate gpus=2 -l 127.0.0.1:0 -s port_file="$T/port" -t "$T/token" \
        -j "$T/journal" -i 100ms 2>"$T/pfid.log" &
    pid=$!
    i=0; while [ ! -s "$T/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
    for k in 1 2; do
        i=0; : >"$T/m$k.prom"
        while ! grep -q '^pfi_gpu_power_watts' "$T/m$k.prom" && [ $i -lt 200 ]; do
            sleep 0.05; curl -s "127.0.0.1:$(cat "$T/port")/metrics" >"$T/m$k.prom"; i=$((i + 1))
        done
    done
    kill "$pid"; wait "$pid" 2>/dev/null
    want_m=$(awk '/^pfi_gpu_power_watts/ { s += $2 } END { printf "%.4f", s / 2 }' "$T/m1.prom" "$T/m2.prom")
    check pfid-metrics 0 "$PFI" ingest --dry-run --q 1 --interval 1 --telemetry "$T/m1.prom" --telemetry "$T/m2.prom"
    near pfid-metrics-power "$(job_power "$T/out")" "$want_m" 0.001
    n=$(grep -c '^  .*/EMU-[0-9-]*: 2 rows, power_w 2 valid' "$T/out")
    [ "$n" = 2 ] && echo "ok   pfid-metrics-gpus" || { echo "FAIL pfid-metrics-gpus: $n"; cat "$T/out"; fail=1; }
    # the enforced limit pfid exports (700 W) is read: a run claiming 300 W is cap-lost
    check pfid-metrics-cap 0 "$PFI" ingest --dry-run --cap 300 --interval 1 --telemetry "$T/m1.prom" --telemetry "$T/m2.prom"
    grep_out pfid-metrics-caplost "flags: .*cap-lost" "$T/out"
    check pfid-metrics-cap-held 0 "$PFI" ingest --dry-run --cap 700 --interval 1 --telemetry "$T/m1.prom" --telemetry "$T/m2.prom"
    if grep -q cap-lost "$T/out"; then echo "FAIL pfid-metrics-cap-held"; fail=1; else echo "ok   pfid-metrics-cap-held"; fi
fi

# ---- time zones ----
# One run (2 GPUs, 60 s steps, 3 h) across Europe/Berlin's fall-back and spring-forward,
# written by tests/golden/dst_reference.py with Python's zoneinfo: zone-less local times,
# UTC times, ISO 8601 with offsets, epoch seconds. Every spelling gives the trapezoid energy
# of the 180 steps (4750500 J) and all 181 timestamps; in UTC without a zone the repeated
# hour would be a jump back, the skipped hour a false gap.
mkdir -p "$T/dst"
/usr/bin/python3 "$SRC/tests/golden/dst_reference.py" "$T/dst" || { echo "FAIL dst reference"; fail=1; }
e_want=$(awk '$1 == "fall_energy_j" { print $2 }' "$T/dst/expected.txt")
energy() { sed -n 's/^energy: \([0-9.]*\) J.*/\1/p' "$1"; }
for spec in "fall_local Europe/Berlin" "fall_utc UTC" "fall_iso Europe/Berlin" "fall_epoch America/New_York" \
            "spring_local Europe/Berlin" "spring_utc UTC"; do
    set -- $spec
    check "tz-$1" 0 "$PFI" ingest --dry-run --timezone "$2" --telemetry "$T/dst/$1.csv"
    near "tz-$1-energy" "$(energy "$T/out")" "$e_want" 0.001
    grep_out "tz-$1-timestamps" "of 181 complete timestamps; 0 incomplete" "$T/out"
    if grep -q "jumped back\|time gap\|partial" "$T/out" "$T/err"; then echo "FAIL tz-$1-clean"; cat "$T/err"; fail=1; else echo "ok   tz-$1-clean"; fi
done
# the same runs in nvidia-smi dmon -o DT's layout (a date and a time of day, zone-less, whole
# seconds and watts: the reference's powers are whole): the same 181 timestamps and energy
for s in fall spring; do
    awk -F', ' 'NR == 1 { print "#Date       Time        gpu   pwr"; print "#YYYYMMDD   HH:MM:SS    Idx     W"; next }
        { split($1, d, " "); gsub("/", "", d[1]); printf " %s   %s   %4d  %5d\n", d[1], substr(d[2], 1, 8), $2, $3 }' \
        "$T/dst/${s}_local.csv" >"$T/dst/${s}_dmon.txt"
    check "tz-$s-dmon" 0 "$PFI" ingest --dry-run --timezone Europe/Berlin --telemetry "$T/dst/${s}_dmon.txt"
    grep_out "tz-$s-dmon-format" "format dmon, 362 rows" "$T/out"
    near "tz-$s-dmon-energy" "$(energy "$T/out")" "$e_want" 0.001
    grep_out "tz-$s-dmon-timestamps" "of 181 complete timestamps; 0 incomplete" "$T/out"
done
check tz-fall-said 0 "$PFI" ingest --dry-run --timezone Europe/Berlin --telemetry "$T/dst/fall_local.csv"
grep_out tz-fall-repeated "read in time zone Europe/Berlin (--timezone); 240 in a repeated fall-back hour" "$T/out"
check tz-default 0 env TZ=UTC "$PFI" ingest --dry-run --telemetry "$T/dst/fall_utc.csv"
grep_out tz-default-said "read in time zone UTC, the machine's" "$T/out"
check tz-bad 2 "$PFI" ingest --dry-run --timezone Mars/Olympus --telemetry "$T/dst/fall_utc.csv"
grep_out tz-bad-said "no such time zone" "$T/err"
# nvidia-smi -q looped (-q -l 1, 3 snapshots of 4 GPUs, Timestamp lines 1 s apart): 4 GPUs of
# 3 rows each, not 12 GPUs; energy 331.61 W x 2 s = 663.22 J
for s in 09 10 11; do sed "s/07:21:09/07:21:$s/" "$SRC/tests/cases/case-17/nvsmi_q_d_power.txt"; done >"$T/loop_q.txt"
check smi-q-loop 0 "$PFI" ingest --dry-run --timezone UTC --telemetry "$T/loop_q.txt"
grep_out smi-q-loop-gpus "^  gpu3: 3 rows" "$T/out"
if grep -q "^  gpu4:" "$T/out"; then echo "FAIL smi-q-loop-no-new-gpus"; fail=1; else echo "ok   smi-q-loop-no-new-gpus"; fi
grep_out smi-q-loop-energy "energy: 663.220 J" "$T/out"

# ---- no hidden limits ----
# One scrape pair of 16 384 GPUs (2048 hosts x 8) whose series carry 72 labels, the
# Hostname label last (past the 64 labels kept: identity labels are always kept): 16 384
# GPUs, job power per scrape 2048 x (8 x 300 + 28 + 64 s): mean 2048 x 2460 = 5038080 W.
/usr/bin/python3 - "$T" <<'PY'
import sys
t = sys.argv[1]
extra = ",".join(f'k8s_label_{i}="value-{i}"' for i in range(68))
for sc in range(2):
    with open(f"{t}/big{sc}.prom", "w") as f:
        f.write("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n")
        for h in range(2048):
            for g in range(8):
                f.write(f'DCGM_FI_DEV_POWER_USAGE{{gpu="{g}",UUID="GPU-{h:05d}-{g}",device="nvidia{g}",{extra},Hostname="node{h:05d}"}} {300 + g + 8 * sc}\n')
PY
check big-scrape 0 "$PFI" ingest --dry-run --q 1 --interval 15 --telemetry "$T/big0.prom" --telemetry "$T/big1.prom"
near big-scrape-power "$(job_power "$T/out")" 5038080 0.001
n=$(grep -c '^  node[0-9]*/GPU-' "$T/out")
[ "$n" = 16384 ] && echo "ok   big-scrape-gpus" || { echo "FAIL big-scrape-gpus: $n"; fail=1; }

# ---- MIG ----
# dcgm-exporter on a MIG GPU: the device's power on each of its 3 instances' series (one
# reading, counted once), per-instance engine activity kept per (UUID, GPU instance);
# a second, plain GPU: job power 250 + 300 = 550 W, 2 GPUs.
{ for s in 0 1; do
    : >"$T/mig$s.prom"
    for gi in 1 2 3; do
        printf 'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-mig0",GPU_I_ID="%s",GPU_I_PROFILE="2g.20gb",Hostname="n1"} 250\n' "$gi" >>"$T/mig$s.prom"
        printf 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-mig0",GPU_I_ID="%s",GPU_I_PROFILE="2g.20gb",Hostname="n1"} 0.%s\n' "$gi" "$gi" >>"$T/mig$s.prom"
    done
    printf 'DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-plain1",Hostname="n1"} 300\n' >>"$T/mig$s.prom"
  done; }
check mig 0 "$PFI" ingest --dry-run --q 1 --interval 15 --telemetry "$T/mig0.prom" --telemetry "$T/mig1.prom"
near mig-power "$(job_power "$T/out")" 550 0.0001
n=$(grep -c '^  n1/GPU-[a-z0-9]*: 2 rows' "$T/out")
[ "$n" = 2 ] && echo "ok   mig-gpus" || { echo "FAIL mig-gpus: $n"; cat "$T/out"; fail=1; }
if grep -q "duplicate" "$T/err"; then echo "FAIL mig-no-duplicates"; cat "$T/err"; fail=1; else echo "ok   mig-no-duplicates"; fi
grep_out mig-instances "^  n1/GPU-mig0/GI3: 2 rows" "$T/out"
# dcgmi dmon with MIG instance rows (GPU-I): instances are not GPUs of the job
{ echo "#Entity   POWER"; echo "ID"; for s in 1 2; do echo "GPU 0   250.0"; echo "GPU-I 1   N/A"; echo "GPU-I 2   N/A"; echo "GPU 1   300.0"; done; } >"$T/mig.dcgmi"
check mig-dcgmi 0 "$PFI" ingest --dry-run --q 1 --telemetry "$T/mig.dcgmi"
near mig-dcgmi-power "$(job_power "$T/out")" 550 0.0001
grep_out mig-dcgmi-complete "top 2 of 2 complete timestamps; 0 incomplete" "$T/out"
# nvidia-smi -q -x -l: two documents 1 s apart by their <timestamp>, 2 GPUs with <uuid>:
# job 400 + 300 W, energy 700 J over the 1 s between the documents
for s in 09 10; do printf '<?xml version="1.0" ?>\n<nvidia_smi_log>\n<timestamp>Wed Jan 14 07:21:%s 2026</timestamp>\n<gpu id="00000000:06:00.0"><uuid>GPU-11111111-2222</uuid><gpu_power_readings><average_power_draw>400.00 W</average_power_draw></gpu_power_readings></gpu>\n<gpu id="00000000:07:00.0"><uuid>GPU-66666666-2222</uuid><gpu_power_readings><average_power_draw>300.00 W</average_power_draw></gpu_power_readings></gpu>\n</nvidia_smi_log>\n' "$s"; done >"$T/loop.xml"
check smi-xml-loop 0 "$PFI" ingest --dry-run --timezone UTC --telemetry "$T/loop.xml"
grep_out smi-xml-loop-energy "energy: 700.000 J (power-trapezoid)" "$T/out"
grep_out smi-xml-loop-gpus "^  gpu1: 2 rows" "$T/out"
# nvidia-smi -q with a "Clocks Event Reasons" section, 4 snapshots: HW Slowdown active in
# the second (311 W): left out, the others 309, 311, 312 W -> 310.6667 W
check smi-q-throttle 0 "$PFI" ingest --dry-run --timezone UTC --cap 300 --q 1 --telemetry "$SRC/tests/data/truth/smi_q_throttle.txt"
near smi-q-throttle-power "$(job_power "$T/out")" 310.6667 0.0001
grep_out smi-q-throttle-count "1 of 4 complete timestamps left out (0 cap-lost: .*; 1 throttled" "$T/out"
# percent vs fraction per DCGM field: a profiling ratio (sm_active, 0..1 by DCGM's definition)
# written in percent (87.5 %, 82.5 %) is that fraction, never a 0..1 glitch: mean 0.85
printf 'timestamp, index, power.draw [W], sm_active [%%]\n2026/01/01 00:00:00.000, 0, 300.00 W, 87.5 %%\n2026/01/01 00:00:01.000, 0, 300.00 W, 82.5 %%\n' >"$T/pct.csv"
check pct-ratio 0 "$PFI" ingest -q --db "$T/pct.db" --group g --cap 300 --timezone UTC --telemetry "$T/pct.csv"
check pct-ratio-runs 0 "$PFI" runs --db "$T/pct.db" --format json
grep_out pct-ratio-feature '"sm_active": 0.8500000' "$T/out"
exit $fail
