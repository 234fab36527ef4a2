#!/bin/sh
# User-review regressions of pfi ingest: a headerless --query-gpu capture read with --fields
# (cells carry the fields' documented units), the GPU-loss times, implausible row times,
# --warmup longer than the run with limit columns, the first overlapping line of two files.
# Usage: review_ingest.sh PFI_BINARY CASES_DIR      (ctest cli_review_ingest)
set -u
PFI=$1
CASES=$2
fail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-review-ingest.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
no_out() { # no_out NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "FAIL $1: '$2' in $3"; cat "$3"; fail=1; else echo "ok   $1"; fi
}

# 1. nvidia-smi --format=csv,noheader with --fields: "301.22 W" is power.draw's documented
# unit, accepted; the loss is at the next row after the error line, after the last good one.
F=timestamp,index,pci.bus_id,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active
check fields-units 0 "$PFI" ingest --dry-run --fields "$F" \
    --telemetry "$CASES/case-03/wrapper_appended.csv"
no_out fields-units-no-contradiction "contradicts" "$T/err"
grep_out fields-units-gpu1-mean "gpu1: 2 rows, power_w 2 valid / 0 missing / 0 out of range, mean 298.3550 W" "$T/out"
grep_out fields-lost-times "gpu1: GPU lost (fell off the bus): last good sample at t=1762093202.011 s, first lost at t=1762093203.008 s" "$T/err"
# A unit that is not the documented one is still rejected, and the error says so.
{ echo "2025/11/02 14:20:01.004, 0, 301 MHz"; echo "2025/11/02 14:20:02.004, 0, 302 MHz"; } >"$T/mhz.csv"
check fields-wrong-unit 1 "$PFI" ingest --dry-run --fields timestamp,index,power.draw --telemetry "$T/mhz.csv"
grep_out fields-wrong-unit-note "value unit 'MHz' contradicts the field's documented unit 'W' in column power.draw" "$T/err"
grep_out fields-wrong-unit-error "no power samples: all 2 power cells were missing or rejected" "$T/err"
# A header naming [W] still contradicts a cell in MHz.
{ echo "timestamp, index, power.draw [W]"; cat "$T/mhz.csv"; } >"$T/mhz_h.csv"
check header-wrong-unit 1 "$PFI" ingest --dry-run --telemetry "$T/mhz_h.csv"
grep_out header-wrong-unit-note "value unit 'MHz' contradicts header unit 'W'" "$T/err"


# 2. One row dated 1970 and one dated 9999-12-31 among 2026 rows: each excluded with a note
# naming its line, counted, never integrated (1 s grid, 1500 J over the 5 s of pieces).
{ echo "timestamp, index, power.draw [W]"
  for s in 0 1 2 3 4 5 6 7 8 9; do d=2026/03/01; [ $s = 3 ] && d=1970/01/01
    [ $s = 6 ] && d=9999/12/31; echo "$d 00:00:0$s.000, 0, 300.00"; done; } >"$T/far.csv"
check far-times 0 "$PFI" ingest --dry-run --telemetry "$T/far.csv"
grep_out far-times-1970 "far.csv:5: time 1970-01-01 00:00:03 is implausible .*row excluded, never integrated" "$T/err"
grep_out far-times-9999 "far.csv:8: time 9999-12-31 00:00:06 is implausible .*row excluded, never integrated" "$T/err"
grep_out far-times-counted "2 samples at implausible times" "$T/err"
grep_out far-times-grid "grid 1 s" "$T/out"
grep_out far-times-energy "^energy: 1500.000 J" "$T/out"

# 3. --warmup past the run on a file with a limit column (some rows cap-lost): the same
# exit-1 error as without it, never exit 0 with cap-short.
{ echo "timestamp, index, power.draw [W], enforced.power.limit [W]"
  for s in 0 1 2 3 4 5; do l=300; [ $s -gt 3 ] && l=250
    for g in 0 1; do echo "2025/01/01 00:00:0$s.000, $g, 300.00 W, $l W"; done; done
} >"$T/limit.csv"
check warmup-limit 1 "$PFI" ingest --dry-run --cap 300 --warmup 100 --telemetry "$T/limit.csv"
grep_out warmup-limit-error "--warmup 100 s drops all 6 complete timestamps" "$T/err"
no_out warmup-limit-no-cap-short "cap-short" "$T/out"

# 4. Two files claiming one GPU over overlapping times: the error names the first
# overlapping line of the second file (line 4, 00:00:05), not its last line.
{ echo "timestamp, index, power.draw [W]"
  for s in 0 1 2 3 4 5; do echo "2025/01/01 00:00:0$s.000, 0, 300.00"; done; } >"$T/node-a.csv"
{ echo "timestamp, index, power.draw [W]"
  for s in 7 8 5 9 3; do echo "2025/01/01 00:00:0$s.000, 0, 300.00"; done; } >"$T/node-b.csv"
check overlap-line 1 "$PFI" ingest --dry-run --host n1 --telemetry "$T/node-a.csv" \
    --telemetry "$T/node-b.csv"
grep_out overlap-line-first "node-b.csv:4: GPU n1/gpu0 is in both" "$T/err"

exit $fail
