#!/bin/sh
# End-to-end: pfi library generate -> analyze -> stats -> fit -> predict, plus errors.
# Usage: stats_fit.sh PFI_BINARY
set -u
PFI=$1
# Sanitizer builds: PLplot's font libraries leak (not pfi's allocations); see lsan.supp.
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")/../data/cli" && pwd)/lsan.supp:print_suppressions=0"
export LSAN_OPTIONS
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
. "$(dirname "$0")/check.sh" # check, grep_out
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
cp "$T/out" "$T/table"
check stats-csv 0 "$PFI" stats "$T/groups.csv"
# "-" reads the groups CSV from stdin, as other commands read "-": the same table as the file
cp "$T/out" "$T/file-table"
check stats-stdin 0 sh -c '"$1" stats - <"$2"' sh "$PFI" "$T/groups.csv"
if cmp -s "$T/out" "$T/file-table"; then echo "ok   stats-stdin-same"; else echo "FAIL stats-stdin-same"; fail=1; fi
check fit-stdin 0 sh -c '"$1" fit - <"$2"' sh "$PFI" "$T/groups.csv"
# a groups table without feature columns: said, not an empty Spearman table "over 0"
cut -d, -f1-3 "$T/groups.csv" >"$T/nofeat.csv"
check stats-no-features 0 "$PFI" stats "$T/nofeat.csv"
grep_out stats-no-features-said "feature: none (the input has no feature columns"
# a groups CSV naming a column twice: refused (the last one won)
printf 'group,job_class,pfi,pfi\ng1,x,1.2,3\ng2,x,1.3,4\n' >"$T/dup.csv"
check stats-dup-column 1 "$PFI" stats "$T/dup.csv"
grep -q "dup.csv:1: column 'pfi' appears twice in the header" "$T/err" && echo "ok   stats-dup-column-msg" || { echo "FAIL stats-dup-column-msg"; cat "$T/err"; fail=1; }
if grep -q "over 0" "$T/out"; then echo "FAIL stats-no-features-over-0"; fail=1; else echo "ok   stats-no-features-no-empty-table"; fi
# The same statistics as CSV (long form) and JSON (every section), checked against the table.
check stats-format-csv 0 "$PFI" stats "$T/lib" --format csv
grep_out stats-csv-header "^section,item,feature,step,n,statistic,value$"
grep_out stats-csv-kw "^kruskal_wallis,classes,,,25,h,"
grep_out stats-csv-within "^within_class,moe-ft,dcgm_dram_active\*dcgm_mem_copy_util,,8,p,"
check stats-json 0 "$PFI" stats "$T/lib" --format json -o "$T/stats.json"
python3 - "$T/stats.json" "$T/table" <<'PY' || { echo "FAIL stats-json-values"; fail=1; }
import json, re, sys
d = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
for key in ("classes", "all", "kruskal_wallis", "dunn_holm", "spearman", "sensitivity",
            "within_class"):
    assert key in d, key
h = float(re.search(r"H = ([0-9.]+), df = 2", table).group(1))
assert abs(d["kruskal_wallis"]["h"] - h) < 6e-4 and d["kruskal_wallis"]["df"] == 2
med = {m[0]: float(m[1]) for m in re.findall(r"^  (\S+) +\d+ +([0-9.]+) ", table, re.M)}
for c in d["classes"]:
    assert abs(c["median"] - med[c["class"]]) < 6e-4, c
assert [c["class"] for c in d["classes"]] == ["dense", "moe-pt", "moe-ft"]
assert len(d["dunn_holm"]) == 3 and all(0 <= p["p_holm"] <= 1 for p in d["dunn_holm"])
f = {r["feature"]: r for r in d["spearman"]["features"]}
assert f["dcgm_mem_clock_mhz"]["rho"] is None  # undefined: null, never NaN
rho = float(re.search(r"^  dcgm_dram_active\*dcgm_mem_copy_util +25 +([0-9.-]+)", table, re.M).group(1))
assert abs(f["dcgm_dram_active*dcgm_mem_copy_util"]["rho"] - rho) < 6e-4
assert f["dcgm_tensor_active"]["rho"] < 0 and f["dcgm_tensor_active"]["q_bh"] < 0.05
steps = d["sensitivity"]["steps"]
assert steps[0]["dropped"] is None and steps[0]["n"] == 25 and len(steps) == 11
assert steps[1]["dropped"] in table and steps[1]["n"] == 24
w = d["within_class"]["classes"]
assert [x["class"] for x in w] == ["dense", "moe-pt", "moe-ft"] and all(x["p"] > 0.05 for x in w)
PY
check stats-bad-format 2 "$PFI" stats "$T/lib" --format xml
# Figures: PNG and SVG, atomically written; a bad name is a usage error, an unwritable place
# an output error.
check stats-plots 0 "$PFI" stats "$T/lib" -o "$T/t.txt" --plot-class "$T/class.png" --plot-feature "$T/feature.svg"
head -c 8 "$T/class.png" | od -c | grep -q 'P   N   G' || { echo "FAIL stats-plot-png"; fail=1; }
grep -q "<svg" "$T/feature.svg" || { echo "FAIL stats-plot-svg"; fail=1; }
ls "$T" | grep -q '\.tmp' && { echo "FAIL stats-plot-temporary left"; fail=1; }
check stats-plot-pdf 2 "$PFI" stats "$T/lib" --plot-class "$T/class.pdf"
grep -q -- "--plot-class.*\.png" "$T/err" || { echo "FAIL stats-plot-pdf message"; fail=1; }
[ -e "$T/class.pdf" ] && { echo "FAIL stats-plot-pdf created"; fail=1; }
check stats-plot-unwritable 3 "$PFI" stats "$T/lib" --plot-feature "$T/nope/feature.png"
grep -q "nope/feature.png" "$T/err" || { echo "FAIL stats-plot-unwritable message"; fail=1; }
check compare 0 "$PFI" stats compare "$T/groups.csv" "$T/lib"
grep_out compare-self "Spearman rho = 1.000"
# every A is 0: the relative difference is undefined, printed '-' (never "undefined%")
printf 'group,job_class,pfi\na,x,0\nb,x,0\nc,x,0\n' >"$T/zero.csv"
printf 'group,job_class,pfi\na,x,1\nb,x,2\nc,x,3\n' >"$T/pos.csv"
check compare-zero 0 "$PFI" stats compare "$T/zero.csv" "$T/pos.csv"
grep_out compare-zero-dash "median difference B - A = 2.000; median relative difference (B - A)/A = -$"
grep -q "undefined%" "$T/out" && { echo "FAIL compare-zero: undefined%"; fail=1; }
# fit --format json: a feature name with a quote and a byte that is not UTF-8 stays JSON
/usr/bin/python3 - "$T/groups.csv" "$T/qff.csv" <<'PY' || { echo "FAIL qff.csv"; fail=1; }
import sys
b = open(sys.argv[1], "rb").read().replace(b"dcgm_dram_active,", b'"dr""am\xff",', 1)
open(sys.argv[2], "wb").write(b)
PY
check fit-json-quote 0 "$PFI" fit "$T/qff.csv" --features "$(printf 'dr"am\377')" --format json
/usr/bin/python3 -c 'import json, sys; d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8")); sys.exit(d[0]["features"] != "dr\"am\ufffd")' "$T/out" \
    && echo "ok   fit-json-quote-parsed" || { echo "FAIL fit-json-quote-parsed"; cat "$T/out"; fail=1; }
check fit 0 "$PFI" fit "$T/lib" --features 'dcgm_dram_active*dcgm_mem_copy_util' --features dcgm_dram_active -m "$T/model.json"
grep_out fit-loco "LOCO"
check fit-json 0 "$PFI" fit "$T/groups.csv" --format json
check predict 0 "$PFI" predict -m "$T/model.json" dcgm_dram_active=0.4 dcgm_mem_copy_util=0.3
check predict-groups 0 "$PFI" predict -m "$T/model.json" --groups "$T/lib" --format csv
check predict-outside 0 "$PFI" predict -m "$T/model.json" dcgm_dram_active=1 dcgm_mem_copy_util=1
grep -q "outside the model's training range\|beyond the model's training range" "$T/err" || { echo "FAIL predict-outside warning"; fail=1; }
check predict-missing-feature 2 "$PFI" predict -m "$T/model.json" dcgm_dram_active=0.4
check predict-no-model 2 "$PFI" predict dcgm_dram_active=0.4
check fit-unknown-feature 1 "$PFI" fit "$T/lib" --features nope
check fit-constant 1 "$PFI" fit "$T/lib" --features dcgm_mem_clock_mhz
check stats-missing 1 "$PFI" stats "$T/does-not-exist"
check library-bad-sub 2 "$PFI" library frobnicate
exit $fail
