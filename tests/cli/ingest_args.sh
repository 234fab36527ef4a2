#!/bin/sh
# pfi ingest / pfi runs command lines a new user got wrong, and what pfi must say: a GPU
# count that differs from --gpus, a file given twice, an empty file in a batch, option
# values out of range, a missing or misplaced argument.
# Usage: ingest_args.sh PFI_BINARY      (ctest cli_ingest_args)
set -u
PFI=$1
fail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-ingest-args.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
no_out() { # no_out NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "FAIL $1: '$2' in $3"; cat "$3"; fail=1; else echo "ok   $1"; fi
}
# 4 GPUs x 300 W, 6 samples 1 s apart.
{ echo "timestamp, index, power.draw [W]"
  for s in 0 1 2 3 4 5; do for g in 0 1 2 3; do echo "2025/01/01 00:00:0$s.000, $g, 300.00"; done; done
} >"$T/smi4.csv"
: >"$T/empty.csv"
ingest() { "$PFI" ingest --db "$T/s.db" "$@"; }

# 1. The GPUs seen differ from --gpus, either way: flagged gpu-count and said on stderr.
check gpus-fewer-claimed 0 ingest --group g --cap 300 --gpus 2 --telemetry "$T/smi4.csv"
grep_out gpus-fewer-claimed-flag "^flags:.* gpu-count" "$T/out"
grep_out gpus-fewer-claimed-says "the telemetry has 4 GPUs, --gpus says 2" "$T/err"
check gpus-fewer-claimed-stored 0 "$PFI" runs --db "$T/s.db" --format csv
grep_out gpus-fewer-claimed-flag-stored "^g,,2,300,1200,,,,144," "$T/out"
check gpus-more-claimed 0 ingest --dry-run --gpus 8 --telemetry "$T/smi4.csv"
grep_out gpus-more-claimed-flag "^flags:.* gpu-count" "$T/out"
grep_out gpus-more-claimed-says "the telemetry has 4 GPUs, --gpus says 8" "$T/err"
check gpus-same 0 ingest --dry-run --gpus 4 --telemetry "$T/smi4.csv"
no_out gpus-same-no-flag "gpu-count" "$T/out"

# 2. The same file twice would count its energy twice: refused, by path or by device+inode.
check dup-path 2 ingest --group g --cap 300 --telemetry "$T/smi4.csv" --telemetry "$T/smi4.csv"
grep_out dup-path-names "smi4.csv.*more than once" "$T/err"
ln "$T/smi4.csv" "$T/hard.csv"
check dup-inode 2 ingest --dry-run --telemetry "$T/smi4.csv" --telemetry "$T/hard.csv"
grep_out dup-inode-names "hard.csv.*same file as.*smi4.csv" "$T/err"
check dup-dotslash 2 ingest --dry-run --telemetry "$T/smi4.csv" --telemetry "$T/./smi4.csv"

# 3. An empty file in a batch fails the batch, named; nothing stored.
rm -f "$T/s.db"
check empty-in-batch 1 ingest --group g --cap 300 --telemetry "$T/smi4.csv" --telemetry "$T/empty.csv"
grep_out empty-in-batch-names "empty.csv: empty file" "$T/err"
grep_out empty-in-batch-nothing "1 of 2 telemetry file(s) failed: nothing stored" "$T/err"
[ ! -e "$T/s.db" ] && echo "ok   empty-in-batch-not-stored" || { echo "FAIL empty-in-batch-not-stored"; fail=1; }
check empty-alone 1 ingest --dry-run --telemetry "$T/empty.csv"
grep_out empty-alone-names "empty.csv: empty file" "$T/err"
printf '\357\273\277' >"$T/bom_only.csv"
check empty-bom-only 1 ingest --dry-run --telemetry "$T/smi4.csv" --telemetry "$T/bom_only.csv"
# The documented exception: an empty Prometheus scrape keeps its time slot.
printf 'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a",Hostname="h"} 300 1735689600000\n' >"$T/s1.prom"
printf 'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a",Hostname="h"} 300 1735689602000\n' >"$T/s3.prom"
check empty-prom-scrape 0 ingest --dry-run --telemetry "$T/s1.prom" --telemetry "$T/empty.csv" \
    --telemetry "$T/s3.prom"

# 4. Option values checked before anything is read.
check power-field-unknown 2 ingest --dry-run --power-field foo --telemetry "$T/smi4.csv"
grep_out power-field-unknown-lists "power_avg_w, power_w, power_energy_w, power_instant_w" "$T/err"
check power-field-absent 1 ingest --dry-run --power-field power_instant_w --telemetry "$T/smi4.csv"
grep_out power-field-absent-names "power_instant_w.*not in the telemetry" "$T/err"
check align-0 2 ingest --dry-run --align 0 --telemetry "$T/smi4.csv"
grep_out align-0-says "ingest: \-\-align: bad value '0': expected a number > 0" "$T/err"
check start-date-month 2 ingest --dry-run --start-date 20251399 --telemetry "$T/smi4.csv"
grep_out start-date-says "\-\-start-date.*20251399" "$T/err"
check start-date-feb30 2 ingest --dry-run --start-date 20250230 --telemetry "$T/smi4.csv"
check start-date-leap 0 ingest --dry-run --start-date 20240229 --telemetry "$T/smi4.csv"
check start-date-nonleap 2 ingest --dry-run --start-date 21000229 --telemetry "$T/smi4.csv"
check start-date-frac 2 ingest --dry-run --start-date 20250101.5 --telemetry "$T/smi4.csv"
check cap-absurd 2 ingest --group g --cap 1e9 --telemetry "$T/smi4.csv"
grep_out cap-absurd-says "\-\-cap: .*100000 W" "$T/err"
check cap-high-ok 0 ingest --dry-run --group g --cap 100000 --telemetry "$T/smi4.csv"
check regex-no-log 2 ingest --dry-run --throughput-regex '(?<throughput>[0-9' --telemetry "$T/smi4.csv"
grep_out regex-no-log-says "\-\-throughput-regex" "$T/err"
check regex-no-group 2 ingest --dry-run --throughput-regex '(tps): ([0-9]+)' --telemetry "$T/smi4.csv"
check regex-old-form 0 ingest --dry-run --throughput-regex 'tps: ([0-9]+)' --telemetry "$T/smi4.csv"
check regex-ok 0 ingest --dry-run --throughput-regex 'tps: (?<throughput>[0-9]+)' --telemetry "$T/smi4.csv"

# 5. The message says what is missing or wrong, not a list of everything.
check missing-cap 2 ingest --group g --telemetry "$T/smi4.csv"
grep_out missing-cap-says "missing --cap W" "$T/err"
no_out missing-cap-only "\-\-group NAME\|--telemetry FILE" "$T/err"
check missing-group 2 ingest --cap 300 --telemetry "$T/smi4.csv"
grep_out missing-group-says "missing --group NAME" "$T/err"
check missing-telemetry 2 ingest --dry-run
grep_out missing-telemetry-says "missing --telemetry FILE" "$T/err"
check missing-all 2 ingest
grep_out missing-all-says "missing --telemetry FILE, --group NAME and --cap W" "$T/err"
check q-mistyped 2 ingest --group g --cap 300 -q 0.2 --telemetry "$T/smi4.csv"
grep_out q-mistyped-says "unexpected argument '0.2'" "$T/err"
grep_out q-mistyped-explains "\-q is --quiet.*--q 0.2" "$T/err"
no_out q-mistyped-not-missing "missing" "$T/err"
check stray-arg 2 ingest --group g --cap 300 --telemetry "$T/smi4.csv" "$T/smi4.csv"
grep_out stray-arg-says "unexpected argument '.*smi4.csv'.*--telemetry" "$T/err"
check stray-and-missing 2 ingest --group g --telemetry "$T/smi4.csv" extra
grep_out stray-and-missing-stray "unexpected argument 'extra'" "$T/err"
grep_out stray-and-missing-missing "missing --cap W" "$T/err"
check unknown-option 2 ingest --group g --cap 300 --telemetry "$T/smi4.csv" --bogus
grep_out unknown-option-says "unknown option '--bogus'" "$T/err"
check option-needs-value 2 ingest --group g --telemetry "$T/smi4.csv" --cap
grep_out option-needs-value-says "option '\-\-cap' needs a value" "$T/err"
check runs-extra 2 "$PFI" runs --db "$T/x.db" extra_arg
grep_out runs-extra-says "unexpected argument 'extra_arg'" "$T/err"
check runs-unknown 2 "$PFI" runs --bogus
grep_out runs-unknown-says "unknown option '--bogus'" "$T/err"

# 6. Help and dry-run wording.
check ingest-help 0 "$PFI" ingest --help
grep_out ingest-help-db-optional "\[--db FILE\]" "$T/out"
grep_out ingest-help-dry-run "\-\-dry-run .*neither --group nor --cap" "$T/out"
check runs-help 0 "$PFI" runs --help
grep_out runs-help-flags "1 no-power" "$T/out"
grep_out runs-help-invalid "INVALID" "$T/out"
check dry-run-says 0 ingest --dry-run --telemetry "$T/smi4.csv"
grep_out dry-run-last-line "dry run: nothing stored" "$T/out"
[ "$(tail -n 1 "$T/out" | grep -c 'nothing stored')" -eq 1 ] && echo "ok   dry-run-last" \
    || { echo "FAIL dry-run-last: $(tail -n 1 "$T/out")"; fail=1; }
# A warm-up longer than the capture: said as such, not as a GPU without power.
check warmup-too-long 1 ingest --dry-run --warmup 100000 --telemetry "$T/smi4.csv"
grep_out warmup-too-long-says "warmup 100000 s drops all" "$T/err"
# 7. Binary or endless input through a pipe or device: refused from its first block, not
# copied to $TMPDIR to its end (timeout: a regression must not hang the test).
mkdir "$T/spool"
check zero-device 1 env TMPDIR="$T/spool" timeout 20 "$PFI" ingest --dry-run --telemetry /dev/zero
grep_out zero-device-says "/dev/zero.*not text (a NUL byte at offset 0)" "$T/err"
check zero-pipe 1 sh -c "head -c 4000000 /dev/zero | TMPDIR='$T/spool' timeout 20 '$PFI' ingest --dry-run --telemetry /dev/stdin"
grep_out zero-pipe-says "/dev/stdin.*not text (a NUL byte at offset 0)" "$T/err"
check zero-endless 1 sh -c "cat /dev/zero | TMPDIR='$T/spool' timeout 20 '$PFI' ingest --dry-run --telemetry -"
grep_out zero-endless-says "not text (a NUL byte at offset 0)" "$T/err"
# An endless text stream stops at PFI_MAX_INPUT_BYTES, naming it.
check endless-limit 1 sh -c "yes '2025/01/01 00:00:00.000, 0, 300.00' | TMPDIR='$T/spool' PFI_MAX_INPUT_BYTES=1M timeout 20 '$PFI' ingest --dry-run --telemetry -"
grep_out endless-limit-says "more than 1048576 bytes.*PFI_MAX_INPUT_BYTES" "$T/err"
check limit-bad 2 sh -c "PFI_MAX_INPUT_BYTES=lots '$PFI' ingest --dry-run --telemetry - <'$T/smi4.csv'"
grep_out limit-bad-says "PFI_MAX_INPUT_BYTES: bad value 'lots'" "$T/err"
# "-" is the standard input, as for pfi allocate.
check stdin-dash 0 sh -c "'$PFI' ingest --dry-run --telemetry - <'$T/smi4.csv'"
grep_out stdin-dash-power "1200" "$T/out"
# A value forgotten before the next option: said as a missing value, not a bad one.
check cap-no-value 2 ingest --group g --cap --telemetry "$T/smi4.csv"
grep_out cap-no-value-says "option '--cap' needs a value" "$T/err"
# /dev/null and an empty pipe are empty files, as an empty regular file is.
check empty-regular 1 ingest --dry-run --telemetry "$T/empty.csv"
grep_out empty-regular-says "1 of 1 telemetry file(s) failed" "$T/err"
check empty-devnull 1 ingest --dry-run --telemetry /dev/null
grep_out empty-devnull-says "/dev/null: empty file" "$T/err"
grep_out empty-devnull-failed "1 of 1 telemetry file(s) failed" "$T/err"
no_out empty-devnull-no-summary "dry run" "$T/out"
check empty-pipe 1 sh -c "'$PFI' ingest --dry-run --telemetry - </dev/null"
grep_out empty-pipe-says "-: empty file" "$T/err"
# nan is not a number, as inf is: both noted (file:line) and counted missing.
{ echo "timestamp, index, power.draw [W]"
  for s in 0 1 2 3; do echo "2025/01/01 00:00:0$s.000, 0, 300.00 W"; done
  echo "2025/01/01 00:00:04.000, 0, inf"; echo "2025/01/01 00:00:05.000, 0, nan"
  echo "2025/01/01 00:00:06.000, 0, NaN W"; echo "2025/01/01 00:00:07.000, 0, 300.00 W"
} >"$T/nan.csv"
check nan-inf 0 ingest --dry-run --telemetry "$T/nan.csv"
grep_out nan-inf-inf "nan.csv:6: .*'inf' is not a number" "$T/err"
grep_out nan-inf-nan "nan.csv:7: .*'nan' is not a number" "$T/err"
grep_out nan-inf-nan-unit "nan.csv:8: .*'NaN W' is not a number" "$T/err"
grep_out nan-inf-counted "power_w 5 valid / 3 missing" "$T/out"
# A capture cut short: a last line without its newline is said (file:line); complete, it is
# read (mean (4 x 300 + 25) / 5 = 245 W); a field cut off, it is skipped (mean 300 W).
{ echo "timestamp, index, power.draw [W]"
  for s in 0 1 2 3; do echo "2025/01/01 00:00:0$s.000, 0, 300.00 W"; done
} >"$T/cut-base.csv"
{ cat "$T/cut-base.csv"; printf '2025/01/01 00:00:04.000, 0, 25'; } >"$T/cut.csv"
check cut-last 0 ingest --dry-run --telemetry "$T/cut.csv"
grep_out cut-last-says "cut.csv:6: the last line has no newline" "$T/err"
grep_out cut-last-read "power_w 5 valid / 0 missing / 0 out of range, mean 245.0000 W" "$T/out"
{ cat "$T/cut-base.csv"; printf '2025/01/01 00:00:04.000, 0'; } >"$T/cut2.csv"
check cut-field 0 ingest --dry-run --telemetry "$T/cut2.csv"
grep_out cut-field-says "cut2.csv:6: row has 2 fields, header has 3: skipped" "$T/err"
grep_out cut-field-dropped "power_w 4 valid / 0 missing / 0 out of range, mean 300.0000 W" "$T/out"
exit $fail
