#!/bin/sh
# pfi analyze: the share of undefined Monte Carlo draws (JSON pfi_ratio_undefined_share, an
# undef% table column when any group has some) and the group note for a throughput that rises
# under a cap. Usage: analyze_ci.sh PFI_BINARY            (ctest cli_analyze_ci)
set -u
PFI=$1
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-analyze-ci.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
check() { # NAME WANT_RC CMD...
    name=$1 want=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"
    rc=$?
    [ "$rc" -eq "$want" ] || { echo "FAIL $name: exit $rc, want $want"; cat "$T/err"; fail=1; }
}
has() { grep -q -- "$2" "$T/out" || { echo "FAIL $1: '$2' not in output"; cat "$T/out"; fail=1; }; }
hasnt() { ! grep -q -- "$2" "$T/out" || { echo "FAIL $1: '$2' in output"; fail=1; }; }
# g: 250 W above the reference's throughput (area 1.15); k: its one point binds in about half
# the draws (x = 0.025, noise 1 % on each power)
printf 'job,cap,power,throughput\ng,300,300,100\ng,250,250,110\ng,200,200,90\n' >"$T/g.csv"
printf 'k,300,100,10\nk,250,97.5,9.9\n' >>"$T/g.csv"
M="--group job --cap cap --power power --throughput throughput --noise-rel 0.01"
# shellcheck disable=SC2086
check table 0 "$PFI" analyze $M "$T/g.csv"
has table-column "undef%"
has table-note "note: throughput rises under a cap"
# shellcheck disable=SC2086
check json 0 "$PFI" analyze $M --format json "$T/g.csv"
has json-share '"pfi_ratio_undefined_share": 0\.[3-7]'
grep -A1 -- "\"notes\": \[" "$T/out" | grep -q throughput_rises_under_cap || { echo "FAIL json-note"; fail=1; }
# the JSON's excluded list and the CSV's excluded count agree: g's 250 W point (throughput above
# the reference's: no_throughput_loss) counts in area and CE, so it is in neither
# shellcheck disable=SC2086
"$PFI" analyze $M --format csv "$T/g.csv" >"$T/csv" 2>/dev/null
python3 - "$T/out" "$T/csv" <<'PY' || fail=1
import csv, json, sys
groups = {g["key"]["job"]: g for g in json.load(open(sys.argv[1]))["groups"]}
rows = {r["group"]: r for r in csv.DictReader(open(sys.argv[2]))}
for job, g in groups.items():
    if len(g["excluded"]) != int(rows[job]["excluded"]):
        print("FAIL excluded-agree: %s: JSON lists %d, CSV counts %s"
              % (job, len(g["excluded"]), rows[job]["excluded"]))
        sys.exit(1)
if not any(p["status"] == "no_throughput_loss" for p in groups["g"]["points"]):
    print("FAIL excluded-agree: g has no no_throughput_loss point")
    sys.exit(1)
PY
# u: undefined in about two draws of three (x ~ 0.025 +- 0.014 binds in ~64 %, y ~ 0.001 +-
# 0.014 is > 0 in ~53 %): over half, so a note, no CI and no label, in the table and the JSON
printf 'job,cap,power,throughput\nu,300,100,10\nu,250,97.5,9.99\n' >"$T/u.csv"
# shellcheck disable=SC2086
check mostly-undefined 0 "$PFI" analyze $M "$T/u.csv"
has mostly-undefined-note "note: the PFI is undefined in 6[0-9]\.[0-9] % of the Monte Carlo draws (over 50 %): no CI and no label"
grep -q "^  u  *300  *25\.000  -  .* undefined 1/1/0" "$T/out" || { echo "FAIL mostly-undefined-row"; cat "$T/out"; fail=1; }
# shellcheck disable=SC2086
check mostly-undefined-json 0 "$PFI" analyze $M --format json "$T/u.csv"
python3 - "$T/out" <<'PY' || fail=1
import json, sys
g = json.load(open(sys.argv[1]))["groups"][0]
want = (g["pfi_ratio_ci"] is None and g["label"] == "undefined" and abs(g["pfi_ratio"] - 25) < 1e-6
        and g["notes"] == ["many_undefined_draws", "ci_withheld_mostly_undefined"]
        and 0.5 < g["pfi_ratio_undefined_share"] < 0.8)
if not want:
    print("FAIL mostly-undefined-json: %r" % {k: g[k] for k in ("pfi_ratio_ci", "label", "notes")})
    sys.exit(1)
PY
# e: a 0.01 % throughput loss against 1 % noise: the ratio 1000 lies outside its own CI (about
# [5, 430]): a note in the table, the JSON and the CSV (with the undefined share, 0.2-0.5)
printf 'job,cap,power,throughput\ne,700,5000,1000\ne,600,4500,999.9\ne,500,4000,1000.1\n' >"$T/e.csv"
# shellcheck disable=SC2086
check outside-ci 0 "$PFI" analyze $M "$T/e.csv"
has outside-ci-note "note: the PFI 1000.000 lies outside its 95 % CI: the throughput losses are within the noise"
# shellcheck disable=SC2086
check outside-ci-json 0 "$PFI" analyze $M --format json "$T/e.csv"
grep -A3 -- "\"notes\": \[" "$T/out" | grep -q estimate_outside_ci || { echo "FAIL outside-ci-json"; cat "$T/out"; fail=1; }
# shellcheck disable=SC2086
check outside-ci-csv 0 "$PFI" analyze $M --format csv "$T/e.csv"
python3 - "$T/out" <<'PY' || fail=1
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[0]
ok = (r["notes"] == "many_undefined_draws;estimate_outside_ci"
      and 0.2 < float(r["ci_undefined_share"]) < 0.5
      and not float(r["ci_lo"]) <= float(r["pfi_ratio"]) <= float(r["ci_hi"]))
if not ok:
    print("FAIL outside-ci-csv: %r" % r)
    sys.exit(1)
PY
# h: the estimate inside its CI: no such note
# shellcheck disable=SC2086
"$PFI" analyze $M --format csv "$T/g.csv" >"$T/out" 2>/dev/null
hasnt inside-ci-no-note "estimate_outside_ci"
# z: its one capped point does not bind (x = 0.001 < x_min): undefined, with the reason as a note
# line under its row in the table (not only in the JSON)
printf 'job,cap,power,throughput\nz,300,100,10\nz,250,99.9,9\n' >"$T/z.csv"
# shellcheck disable=SC2086
check undefined-reason 0 "$PFI" analyze $M "$T/z.csv"
grep -A1 "^  z .* undefined 0/0/1" "$T/out" | grep -q "^      note: PFI undefined: no capped run binds (every power decrease is below x_min)" ||
    { echo "FAIL undefined-reason-note"; cat "$T/out"; fail=1; }
# no undefined draws: no column
printf 'job,cap,power,throughput\ng,300,300,100\ng,200,200,90\n' >"$T/h.csv"
# shellcheck disable=SC2086
check table-clean 0 "$PFI" analyze $M "$T/h.csv"
hasnt table-no-column "undef%"
hasnt table-no-note "note:"
[ $fail -eq 0 ] && echo "analyze_ci: all checks passed"
exit $fail
