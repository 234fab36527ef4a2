#!/bin/sh
# User-review regressions: every watt input shares one bound (PFI_TOPO_MAX_W, 1e12 W, as pfi
# allocate --budget-w): pfi control --budget-w and a schedule's target refuse 1e308 with the
# range named (the old code accepted both and printed a 309-digit budget); control's second
# options (--run-for, --start, --duration, --ramp) end by a year, as a schedule's events.
# Usage: review_bounds.sh PFI_BINARY      (ctest cli_review_bounds)
set -u
PFI=$1
fail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-review-bounds.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
printf 'localhost:1\n' >"$T/ag"
check allocate-budget 2 "$PFI" allocate --budget-w 1e308 "$T/none.csv"
check control-budget 2 "$PFI" control --agents "$T/ag" --budget-w 1e308 --run-for 2 --db "$T/big.db"
grep_out control-budget-says "budget-w: bad value '1e308': expected watts from 1 to 1e12" "$T/err"
check control-budget-tiny 2 "$PFI" control --agents "$T/ag" --budget-w 1e-300 --run-for 2 --db "$T/big.db"
check control-speed-tiny 2 "$PFI" control --agents "$T/ag" --schedule /dev/null --speed 1e-300 --run-for 2 --db "$T/big.db"
grep_out control-speed-says "speed: bad value '1e-300': expected a number in \[0.0001, 10000\]" "$T/err"
if [ -e "$T/big.db" ]; then echo "FAIL control-budget: wrote a store"; fail=1; fi
check control-runfor 2 "$PFI" control --agents "$T/ag" --budget-w 5000 --run-for 1e308 --db "$T/big.db"
grep_out control-runfor-says "run-for: bad value '1e308': expected seconds, at most 31536000" "$T/err"
printf '0 100 1e308W\n' >"$T/s.txt"
check schedule-budget 1 "$PFI" schedule "$T/s.txt"
grep_out schedule-budget-says "budget_w 1e+308: expected watts > 0 and <= 1e+12" "$T/err"
if grep -q '[0-9]\{20\}' "$T/out" "$T/err"; then echo "FAIL schedule-budget: a 20-digit number"; fail=1; fi
printf '0 100 1000000000000W\n' >"$T/s12.txt"
check schedule-budget-max 0 "$PFI" schedule "$T/s12.txt"
printf 'start_s,end_s,ramp_s,budget_w\n0,600,60,2e12\n' >"$T/s.csv"
check schedule-budget-csv 1 "$PFI" schedule "$T/s.csv"
grep_out schedule-budget-csv-says "s.csv:2: budget_w 2e+12: expected watts > 0 and <= 1e+12" "$T/err"
# --speed bounded both ways ([0.0001, 10000]: 1e-300 made every event time overflow a year);
# simulate's --cap-step bounded as pfi allocate's (every job's cap range), --deep-class a class
# of the library, listed when it is not.
for v in 1e-300 0.00009; do
    check "schedule-speed-$v" 2 "$PFI" schedule --speed "$v" "$T/s12.txt"
    grep_out "schedule-speed-$v-says" "speed: bad value '$v': expected a number in \[0.0001, 10000\]" "$T/err"
    check "settle-speed-$v" 2 "$PFI" report --settlement --speed "$v" "$T/none.db"
    grep_out "settle-speed-$v-says" "speed: bad value '$v': expected a number in \[0.0001, 10000\]" "$T/err"
done
check schedule-speed-min 0 "$PFI" schedule --speed 0.0001 "$T/s12.txt"
check simulate-cap-step 2 "$PFI" simulate --cap-step 1e308 --workloads 2
grep_out simulate-cap-step-says "cap-step 1e+308 W is larger than every job's cap range" "$T/err"
check simulate-deep-class 2 "$PFI" simulate --deep-class bogus --workloads 2
grep_out simulate-deep-class-says "has no class 'bogus'; its classes: dense, moe-pt, moe-ft" "$T/err"
exit $fail
