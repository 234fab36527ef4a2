#!/bin/sh
# End-to-end: pfi library generate -> analyze -> stats -> fit -> predict, plus errors.
# Usage: stats_fit.sh PFI_BINARY
set -u
PFI=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { # check NAME EXPECTED_EXIT COMMAND...
    name=$1; want=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL $name: exit $got, want $want"; cat "$T/err"; fail=1
    else
        echo "ok   $name"
    fi
}
grep_out() { # grep_out NAME PATTERN: the last command's stdout must match
    if grep -q -- "$2" "$T/out"; then echo "ok   $1"; else echo "FAIL $1: no '$2'"; fail=1; fi
}
for v in library stats fit predict; do check "$v-help" 0 "$PFI" "$v" --help; done
check generate 0 "$PFI" library generate --quiet "$T/lib"
grep -q '^1,' "$T/lib/runs.csv" && grep -q SYNTHETIC "$T/lib/pfi-dataset.json" || { echo "FAIL synthetic label"; fail=1; }
check analyze 0 "$PFI" analyze --draws 100 "$T/lib"
grep_out analyze-groups "25 sweep groups, 25 with a defined PFI"
check stats 0 "$PFI" stats "$T/lib" --groups-out "$T/groups.csv"
grep_out stats-kw "Kruskal-Wallis across classes: H = .*df = 2"
grep_out stats-undefined "dcgm_mem_clock_mhz .*undefined"
check stats-csv 0 "$PFI" stats "$T/groups.csv"
check compare 0 "$PFI" stats compare "$T/groups.csv" "$T/lib"
grep_out compare-self "Spearman rho = 1.000"
check fit 0 "$PFI" fit "$T/lib" --features 'dcgm_dram_active*dcgm_mem_copy_util' --features dcgm_dram_active -m "$T/model.json"
grep_out fit-loco "LOCO"
check fit-json 0 "$PFI" fit "$T/groups.csv" --format json
check predict 0 "$PFI" predict -m "$T/model.json" dcgm_dram_active=0.4 dcgm_mem_copy_util=0.3
check predict-groups 0 "$PFI" predict -m "$T/model.json" --groups "$T/lib" --format csv
check predict-outside 0 "$PFI" predict -m "$T/model.json" dcgm_dram_active=1 dcgm_mem_copy_util=1
grep -q "outside the model's training range\|beyond the model's training range" "$T/err" || { echo "FAIL predict-outside warning"; fail=1; }
check predict-missing-feature 1 "$PFI" predict -m "$T/model.json" dcgm_dram_active=0.4
check predict-no-model 2 "$PFI" predict dcgm_dram_active=0.4
check fit-unknown-feature 1 "$PFI" fit "$T/lib" --features nope
check fit-constant 1 "$PFI" fit "$T/lib" --features dcgm_mem_clock_mhz
check stats-missing 1 "$PFI" stats "$T/does-not-exist"
check library-bad-sub 2 "$PFI" library frobnicate
exit $fail
