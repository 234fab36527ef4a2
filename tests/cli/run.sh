#!/bin/sh
# End-to-end tests of `pfi analyze`: exit codes, error messages, outputs.
# Usage: run.sh PFI_BINARY SOURCE_DIR      (ctest `cli`)
#
# Every check prints "ok NAME" or "FAIL NAME: why"; the script exits 1 when any check failed.
# It works in a fresh temporary directory (removed on exit) and never writes into SOURCE_DIR.
# Inputs for the error cases are generated here; the hand-made dataset with its own manifest
# lives in SOURCE_DIR/tests/data/cli/handmade.
#
# Project rules checked: bad input gets ONE line on stderr ("pfi: FILE:LINE: column 'C': ...")
# naming file, line, column and what was expected, and a non-zero exit (1 bad input, 2 bad
# command line, 3 output not written, 4 internal); no crash, no sanitizer report, nothing on
# stdout after an error; outputs are written whole or not at all (temporary + rename); missing
# values are missing, never zero; the process locale does not change any output byte.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 PFI_BINARY SOURCE_DIR" >&2
    exit 2
fi
case $1 in /*) PFI=$1 ;; *) PFI=$(pwd)/$1 ;; esac
SRC=$(cd "$2" && pwd) || exit 2
if [ ! -x "$PFI" ]; then
    echo "FAIL setup: $PFI is not an executable" >&2
    exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-cli.XXXXXX") || exit 1
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() { chmod -R u+rwx "$T" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
cd "$T" || exit 1

# Reference outputs are made in the C locale; the locale checks then vary it.
LC_ALL=C
export LC_ALL
# Sanitizer builds: leaks inside fontconfig/libltdl (loaded by PLplot's cairo driver) are not
# ours; everything else is reported. Harmless for a normal build.
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$SRC/tests/data/cli/lsan.supp:print_suppressions=0"
export LSAN_OPTIONS

NSDI=$SRC/data/zeus_nsdi23_power
JIT=$SRC/data/zeus_jit_profile
A40=$NSDI/summary_power_a40.csv
HAND=$SRC/tests/data/cli/handmade
# The column mapping of the NSDI files as flags (for files without a manifest beside them).
NSDI_MAP="--group dataset,network,batch_size,optimizer --cap power_limit --power average_power --time time_per_epoch"
GROUPS_ALL=230     # 53 + 45 + 52 + 68 NSDI groups + 12 JIT files
GROUPS_A40=53

TIMEOUT=""    # a guard against a hanging pfi, where coreutils' timeout exists
command -v timeout >/dev/null 2>&1 && TIMEOUT="timeout 60"
HAVE_PY=false
command -v python3 >/dev/null 2>&1 && HAVE_PY=true

fail=0
passed=0
failed=0
start=$(date +%s)

ok() {
    echo "ok $1"
    passed=$((passed + 1))
}
bad() {
    echo "FAIL $1: $2"
    failed=$((failed + 1))
    fail=1
}
# report NAME WHY: ok when WHY is empty.
PASSED="|"
report() {
    if [ -z "$2" ]; then
        ok "$1"
        PASSED="$PASSED$1|"
    else
        bad "$1" "$2"
    fi
}
# needs CHECK...: "" when every CHECK passed; a comparison against a failed check's output
# proves nothing, so it fails too.
needs() {
    for _c in "$@"; do
        case $PASSED in
        *"|$_c|"*) ;;
        *)
            echo "no valid reference: check '$_c' failed"
            return
            ;;
        esac
    done
}
# A short, one-line excerpt of a file for messages.
excerpt() {
    if [ -s "$1" ]; then
        head -c 400 "$1" | tr '\n' '|' | sed 's/|$//'
    else
        printf '(empty)'
    fi
}

# run ARGS...: pfi with stdout in out, stderr in err, exit status in rc (60 s guard).
run() {
    $TIMEOUT "$PFI" "$@" </dev/null >out 2>err
    rc=$?
}
# run_stdin FILE ARGS...: as run, with FILE on standard input (through a pipe).
run_stdin() {
    _in=$1
    shift
    # shellcheck disable=SC2002 # a pipe on purpose: stdin must not need to be seekable
    cat "$_in" | "$PFI" "$@" >out 2>err
    rc=$?
}

# sanity: why the last run is broken whatever it was asked (crash, sanitizer), or "".
sanity() {
    if [ "$rc" -eq 124 ]; then
        echo "timed out"
    elif [ "$rc" -ge 128 ]; then
        echo "crashed (exit $rc, signal $((rc - 128))); stderr: $(excerpt err)"
    elif grep -q -e 'Sanitizer' -e 'runtime error:' err; then
        echo "sanitizer report: $(grep -m1 -e 'Sanitizer' -e 'runtime error:' err)"
    fi
}

# success_why: why the last run is not a clean success (exit 0, nothing on stderr), or "".
success_why() {
    _s=$(sanity)
    if [ -n "$_s" ]; then
        echo "$_s"
    elif [ "$rc" -ne 0 ]; then
        echo "exit $rc, want 0; stderr: $(excerpt err)"
    elif [ -s err ]; then
        echo "unexpected stderr: $(excerpt err)"
    fi
}

# error_why WANT_RC PATTERNS: why the last run is not the expected error, or "".
# PATTERNS: fixed strings separated by ';', each must occur in stderr. Exit 1 and 3 need
# exactly one stderr line starting "pfi: "; exit 2 allows a second (hint) line. Nothing may
# be written on stdout.
error_why() {
    _want=$1
    _pats=$2
    _s=$(sanity)
    if [ -n "$_s" ]; then
        echo "$_s"
        return
    fi
    if [ "$rc" -ne "$_want" ]; then
        echo "exit $rc, want $_want; stderr: $(excerpt err)"
        return
    fi
    _n=$(wc -l <err | tr -d ' ')
    _max=1
    [ "$_want" -eq 2 ] && _max=2
    if [ "$_n" -lt 1 ] || [ "$_n" -gt "$_max" ]; then
        echo "want one message line on stderr, got $_n line(s): $(excerpt err)"
        return
    fi
    if [ "$_want" -ne 2 ]; then
        case $(head -n 1 err) in
        "pfi: "*) ;;
        *)
            echo "message does not start with 'pfi: ': $(excerpt err)"
            return
            ;;
        esac
    fi
    _miss=""
    _ifs=$IFS
    IFS=';'
    set -f
    for _p in $_pats; do
        grep -qF -- "$_p" err || _miss="$_miss '$_p'"
    done
    set +f
    IFS=$_ifs
    if [ -n "$_miss" ]; then
        echo "stderr lacks$_miss: $(excerpt err)"
        return
    fi
    if [ -s out ]; then
        echo "wrote to stdout despite the error: $(excerpt out)"
    fi
}

# err_case NAME WANT_RC PATTERNS ARGS...: run pfi ARGS and expect the error.
err_case() {
    _name=$1
    _w=$2
    _p=$3
    shift 3
    run "$@"
    report "$_name" "$(error_why "$_w" "$_p")"
}

# no_temp DIR: why temporary files are left in DIR, or "".
no_temp() {
    _left=$(find "$1" -name '*.tmp*' 2>/dev/null | head -3 | tr '\n' ' ')
    [ -n "$_left" ] && echo "temporary files left behind: $_left"
}

# py CHECK ARGS...: run a check of check.py; prints why it failed, or nothing.
py() {
    if ! $HAVE_PY; then
        echo "python3 not found (needed to parse CSV/JSON output)"
        return
    fi
    python3 "$T/check.py" "$@" 2>&1 | head -c 600
}

# ---- the Python checks of CSV and JSON output ---------------------------------------------
cat >"$T/check.py" <<'PYEOF'
import csv, json, math, os, sys

def die(msg):
    print(msg)
    sys.exit(1)

def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except Exception as e:
        die("not valid JSON: %s" % e)

def load_csv(path):
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except Exception as e:
        die("not valid CSV: %s" % e)
    if not rows:
        die("empty CSV")
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]], rows

def close(a, b, rel=1e-9):
    return a is not None and b is not None and abs(a - b) <= rel * abs(b)

CSV_COLS = ("file,group,job_class,cap_ref_w,power_ref_w,throughput_ref,pfi_ratio,ci_lo,"
            "ci_median,ci_hi,pfi_area,pfi_ce,label,points_used,points_ratio,excluded,"
            "undefined_reason,ci_undefined_share,notes").split(",")
KNOWN = dict(dataset="sentiment140", network="bert_base_uncased", batch_size="8",
             optimizer="adamw")
KNOWN_RATIO = 4.543083246545051

def csv_check(path, n):
    header, rows, raw = load_csv(path)
    if header != CSV_COLS:
        die("header is %s, want %s" % (",".join(header), ",".join(CSV_COLS)))
    if len(rows) != n:
        die("%d data rows, want %d" % (len(rows), n))
    for i, r in enumerate(raw[1:], 2):
        if len(r) != len(CSV_COLS):
            die("line %d has %d fields, want %d" % (i, len(r), len(CSV_COLS)))
    for i, r in enumerate(rows, 2):
        for k, v in r.items():
            if v.lower() in ("nan", "-nan", "inf", "-inf", "null"):
                die("line %d column %s: '%s' (undefined must be an empty cell)" % (i, k, v))
        if (r["pfi_ratio"] == "") != (r["undefined_reason"] != ""):
            die("line %d: pfi_ratio '%s' but undefined_reason '%s'"
                % (i, r["pfi_ratio"], r["undefined_reason"]))
        if r["pfi_ratio"] != "" and not float(r["pfi_ratio"]) > 0:
            die("line %d: pfi_ratio %s is not > 0" % (i, r["pfi_ratio"]))
    return rows

def csv_real(path):
    rows = csv_check(path, 230)
    hit = [r for r in rows if os.path.basename(r["file"]) == "summary_power_a40.csv"
           and r["group"] == "sentiment140|bert_base_uncased|8|adamw"]
    if len(hit) != 1:
        die("%d rows for summary_power_a40.csv sentiment140|bert_base_uncased|8|adamw, want 1"
            % len(hit))
    r = hit[0]
    if not close(float(r["pfi_ratio"]), KNOWN_RATIO):
        die("A40 sentiment140/8 pfi_ratio %s, want %r" % (r["pfi_ratio"], KNOWN_RATIO))
    if r["excluded"] != "2":
        die("A40 sentiment140/8 excluded %s, want 2" % r["excluded"])
    files = {}
    for r in rows:
        base = os.path.basename(r["file"])
        files[base] = files.get(base, 0) + 1
    want = {"summary_power_a40.csv": 53, "summary_power_p100.csv": 45,
            "summary_power_rtx6000.csv": 52, "summary_power_v100.csv": 68}
    for f, n in want.items():
        if files.get(f) != n:
            die("%s: %s groups, want %d" % (f, files.get(f), n))
    if len(files) != 16:
        die("%d files in the output, want 16" % len(files))

def json_real(path):
    d = load_json(path)
    g = d.get("groups")
    if not isinstance(g, list) or len(g) != 230:
        die("groups: %s entries, want 230" % (len(g) if isinstance(g, list) else g))
    s = d.get("summary", {})
    if s.get("groups") != 230:
        die("summary.groups %r, want 230" % s.get("groups"))
    if not isinstance(s.get("defined"), int) or not 0 < s["defined"] <= 230:
        die("summary.defined %r" % s.get("defined"))
    if len(s.get("by_file", {})) != 16:
        die("summary.by_file has %d files, want 16" % len(s.get("by_file", {})))
    for x in g:
        if (x["pfi_ratio"] is None) != (x["undefined_reason"] is not None):
            die("group %s: pfi_ratio %r with undefined_reason %r"
                % (x["key"], x["pfi_ratio"], x["undefined_reason"]))
        if x["pfi_ratio"] is not None and not x["pfi_ratio"] > 0:
            die("group %s: pfi_ratio %r is not > 0" % (x["key"], x["pfi_ratio"]))
        # excluded = left out of every definition, as the CSV's and the table's count; a point
        # without a throughput loss is left out of the ratio only (its status says so)
        for p in x["points"]:
            listed = any(e["line"] == p["line"] and e["reason"] == p["status"]
                         for e in x["excluded"])
            if listed != (p["status"] not in ("used", "no_throughput_loss")):
                die("group %s: point at line %s (%s) %s excluded"
                    % (x["key"], p["line"], p["status"], "in" if listed else "missing from"))
    hit = [x for x in g if os.path.basename(x["file"]) == "summary_power_a40.csv"
           and x["key"] == KNOWN]
    if len(hit) != 1:
        die("%d groups for A40 %s, want 1" % (len(hit), KNOWN))
    x = hit[0]
    if not close(x["pfi_ratio"], KNOWN_RATIO):
        die("A40 sentiment140/8 pfi_ratio %r, want %r" % (x["pfi_ratio"], KNOWN_RATIO))
    reasons = [e["reason"] for e in x["excluded"]]
    if reasons != ["power_above_reference", "power_above_reference"]:
        die("A40 sentiment140/8 excluded %r, want two power_above_reference" % reasons)
    if x["label"] != "inelastic":
        die("A40 sentiment140/8 label %r, want inelastic" % x["label"])

def json_handmade(path):
    d = load_json(path)
    g = {x["key"].get("job"): x for x in d.get("groups", [])}
    if sorted(g) != ["llama-8b", "mixtral", "solo"]:
        die("groups %s, want llama-8b, mixtral, solo" % sorted(g))
    ll = g["llama-8b"]
    if not close(ll["pfi_ratio"], 4.512820512820513):
        die("llama-8b pfi_ratio %r, want 4.512820512820513" % ll["pfi_ratio"])
    na = [e for e in ll["excluded"] if e["reason"] == "missing_power"]
    if len(na) != 1 or na[0]["line"] != 5 or na[0]["cap_w"] != 500:
        die("llama-8b: want the N/A run (line 5, 500 W) excluded as missing_power, got %r"
            % ll["excluded"])
    p500 = [p for p in ll["points"] if p["cap_w"] == 500]
    if len(p500) != 1 or p500[0]["power"] is not None or p500[0]["status"] != "missing_power":
        die("llama-8b: 500 W point %r, want power null and status missing_power" % p500)
    p600 = [p for p in ll["points"] if p["cap_w"] == 600]
    if len(p600) != 1 or p600[0]["runs"] != 2:
        die("llama-8b: duplicate 600 W caps %r, want one point with runs 2" % p600)
    if not close(p600[0]["power"], 575.0) or not close(p600[0]["throughput"], 985.0):
        die("llama-8b: merged 600 W point %r, want power 575 throughput 985" % p600[0])
    if ll["points_ratio"] != 2 or ll["job_class"] != "dense" or ll["gpus"] != 8:
        die("llama-8b: points_ratio %r job_class %r gpus %r, want 2, dense, 8"
            % (ll["points_ratio"], ll["job_class"], ll["gpus"]))
    mx = g["mixtral"]
    got = sorted((e["line"], e["reason"]) for e in mx["excluded"])
    if got != [(9, "missing_power"), (10, "missing_throughput")]:
        die("mixtral excluded %r, want line 9 missing_power ([N/A]) and line 10 "
            "missing_throughput (empty cell)" % got)
    if not close(mx["pfi_ratio"], 2.7941176470588234):
        die("mixtral pfi_ratio %r, want 2.7941176470588234" % mx["pfi_ratio"])
    so = g["solo"]
    if so["pfi_ratio"] is not None:
        die("solo (one run) pfi_ratio %r, want null" % so["pfi_ratio"])
    if not isinstance(so["undefined_reason"], str) or not so["undefined_reason"]:
        die("solo: undefined_reason %r, want a reason" % so["undefined_reason"])
    if so["label"] != "undefined" or so["pfi_ratio_ci"] is not None:
        die("solo: label %r ci %r, want undefined and null" % (so["label"], so["pfi_ratio_ci"]))
    s = d.get("summary", {})
    bc = s.get("by_class")
    if not isinstance(bc, dict) or sorted(bc) != ["dense", "moe-pt"]:
        die("summary.by_class %r, want dense and moe-pt" % bc)
    if bc["dense"].get("groups") != 2 or bc["dense"].get("defined") != 1 \
            or bc["moe-pt"].get("groups") != 1:
        die("summary.by_class %r, want dense 2 groups/1 defined, moe-pt 1 group" % bc)
    if s.get("groups") != 3 or s.get("defined") != 2:
        die("summary groups %r defined %r, want 3 and 2" % (s.get("groups"), s.get("defined")))
    if d.get("options", {}).get("noise_rel") != 0.02:
        die("options.noise_rel %r, want 0.02 from the manifest" % d.get("options", {}).get("noise_rel"))
    for x in (ll, mx):
        if x["pfi_ratio_ci"] is None:
            die("%s: no CI although the manifest gives noise_rel" % x["key"])

def json_count(path, n):
    d = load_json(path)
    if len(d.get("groups", [])) != int(n) or d.get("summary", {}).get("groups") != int(n):
        die("groups %d, summary.groups %r, want %s"
            % (len(d.get("groups", [])), d.get("summary", {}).get("groups"), n))

def seed_val(path, seed):
    d = load_json(path)
    if d.get("options", {}).get("seed") != int(seed):
        die("options.seed %r, want %s" % (d.get("options", {}).get("seed"), seed))

CI = ("ci_lo", "ci_median", "ci_hi")

def ci_cols(path):
    _, rows, _ = load_csv(path)
    return rows

def seed_same(a, b):
    ra, rb = ci_cols(a), ci_cols(b)
    if len(ra) != len(rb):
        die("row counts differ")
    if not any(r["ci_lo"] for r in ra):
        die("no group has a CI (with --noise-rel every defined group should)")
    for x, y in zip(ra, rb):
        if [x[k] for k in CI] != [y[k] for k in CI]:
            die("%s: CI %s vs %s" % (x["file"], [x[k] for k in CI], [y[k] for k in CI]))

def seed_differ(a, b):
    ra, rb = ci_cols(a), ci_cols(b)
    if len(ra) != len(rb):
        die("row counts differ")
    for x, y in zip(ra, rb):
        if x["pfi_ratio"] != y["pfi_ratio"]:
            die("%s: the point estimate changed with the seed (%s vs %s)"
                % (x["file"], x["pfi_ratio"], y["pfi_ratio"]))
    if all([x[k] for k in CI] == [y[k] for k in CI] for x, y in zip(ra, rb)):
        die("seed 1 and seed 2 gave identical CIs for every group")

def same_but_file(a, b, n):
    _, ra, _ = load_csv(a)
    _, rb, _ = load_csv(b)
    if len(ra) != int(n) or len(rb) != int(n):
        die("%d and %d rows, want %s" % (len(ra), len(rb), n))
    for x, y in zip(ra, rb):
        x = dict(x); y = dict(y)
        x.pop("file"); y.pop("file")
        if x != y:
            die("rows differ: %r vs %r" % (x, y))

fn = {"csv-real": csv_real, "json-real": json_real, "json-handmade": json_handmade,
      "csv-count": lambda p, n: csv_check(p, int(n)), "json-count": json_count,
      "seed-val": seed_val, "seed-same": seed_same, "seed-differ": seed_differ,
      "same-but-file": same_but_file}[sys.argv[1]]
fn(*sys.argv[2:])
PYEOF

# ---- inputs for the error cases ------------------------------------------------------------
HDR=$(head -n 1 "$A40")
ROW_REF="c,n,8,a,300,10,200"
mkcsv() { # mkcsv FILE LAST_ROW: header, a reference row, then LAST_ROW on line 3
    printf '%s\n%s\n%s\n' "$HDR" "$ROW_REF" "$2" >"$1"
}
: >empty.csv
printf '%s\n' "$HDR" >header_only.csv
head -n 5 "$A40" | sed '1s/average_power/avg_pwr/' >renamed.csv
mkcsv nonnum.csv "c,n,8,a,250,11,abc"
mkcsv negative.csv "c,n,8,a,250,11,-5"
mkcsv inf.csv "c,n,8,a,250,11,inf"
mkcsv huge_power.csv "c,n,8,a,250,11,1e308"
mkcsv huge_cap.csv "c,n,8,a,1e300,11,180"
mkcsv few.csv "c,n,8,a,250,11"
mkcsv many.csv "c,n,8,a,250,11,180,9"
mkcsv quote_in_field.csv 'c,n,8,a,250,1"1,180'
mkcsv quote_unterminated.csv 'c,n,8,a,250,"11,180'
printf '%s\n%s\nc,n,8,a,250,11,1\000\n' "$HDR" "$ROW_REF" >nul.csv
{
    printf '%s\n%s\nc,n,8,a,250,11,' "$HDR" "$ROW_REF"
    head -c 1048576 /dev/zero | tr '\0' '1'
    printf '\n'
} >longline.csv
mkdir nomanifest && cp "$A40" nomanifest/
mkman() { # mkman DIR: a dataset dir with a copy of the A40 file; manifest on stdin
    mkdir "$1" && head -n 20 "$A40" >"$1/summary_power_a40.csv" && cat >"$1/pfi-dataset.json"
}
mkman man_syntax <<'EOF'
{
  "pfi_manifest": 1,
  "files": "summary_power_*.csv",
  "mapping": {
    "group": ["dataset", "network", "batch_size", "optimizer"],
    "cap": "power_limit",
    "power": "average_power"
    "time": "time_per_epoch"
  }
}
EOF
mkman man_key <<'EOF'
{
  "pfi_manifest": 1,
  "files": "summary_power_*.csv",
  "colour": "blue",
  "mapping": {
    "group": ["dataset", "network", "batch_size", "optimizer"],
    "cap": "power_limit",
    "power": "average_power",
    "time": "time_per_epoch"
  }
}
EOF
mkman man_field <<'EOF'
{
  "pfi_manifest": 1,
  "mapping": {
    "group": ["dataset", "network", "batch_size", "optimizer"],
    "cap": "power_limit",
    "powr": "average_power",
    "time": "time_per_epoch"
  }
}
EOF
mkman man_version <<'EOF'
{
  "pfi_manifest": 2,
  "mapping": {
    "group": ["dataset", "network", "batch_size", "optimizer"],
    "cap": "power_limit",
    "power": "average_power",
    "time": "time_per_epoch"
  }
}
EOF

# ---- bad input: exit 1, one line naming file, line, column, what was expected ---------------
err_case missing-file 1 "nosuch.csv;no such file" analyze nosuch.csv
err_case dir-without-manifest 2 "nomanifest;pfi-dataset.json;--group" analyze nomanifest
# shellcheck disable=SC2086
{
    err_case empty-file 1 "empty.csv;header" analyze $NSDI_MAP empty.csv
    err_case header-only 1 "header_only.csv;data row" analyze $NSDI_MAP header_only.csv
    err_case missing-mapped-column 1 "renamed.csv:1:;average_power;header" analyze $NSDI_MAP renamed.csv
    err_case non-numeric 1 "nonnum.csv:3:;average_power;expected;abc" analyze $NSDI_MAP nonnum.csv
    err_case negative 1 "negative.csv:3:;average_power;>= 0;-5" analyze $NSDI_MAP negative.csv
    err_case inf 1 "inf.csv:3:;average_power;expected;inf" analyze $NSDI_MAP inf.csv
    err_case huge-power 1 "huge_power.csv:3:;average_power;at most 1e+09;1e+308" analyze $NSDI_MAP huge_power.csv
    err_case huge-cap 1 "huge_cap.csv:3:;power_limit;at most 100000;1e300" analyze $NSDI_MAP huge_cap.csv
    err_case too-few-fields 1 "few.csv:3:;7 fields;6" analyze $NSDI_MAP few.csv
    err_case too-many-fields 1 "many.csv:3:;7 fields;8" analyze $NSDI_MAP many.csv
    err_case quote-in-field 1 "quote_in_field.csv:3:;quot" analyze $NSDI_MAP quote_in_field.csv
    err_case quote-unterminated 1 "quote_unterminated.csv:3:;quot" analyze $NSDI_MAP quote_unterminated.csv
    err_case nul-byte 1 "nul.csv:3:;NUL" analyze $NSDI_MAP nul.csv
}

# A 1 MB line must be refused fast, in bounded memory. ulimit -v cannot be used with
# AddressSanitizer (it reserves terabytes of shadow), so the memory bound is only applied
# when the binary runs under it.
# The probe runs in its own sh so that an abort is reported there, not by this shell.
# shellcheck disable=SC2086
if sh -c 'ulimit -v 200000 && "$0" version; exit $?' "$PFI" >/dev/null 2>&1; then
    limit="under ulimit -v 200000"
    # shellcheck disable=SC3045 # not POSIX; the probe above fails where it is missing
    (ulimit -v 200000 && exec $TIMEOUT "$PFI" analyze $NSDI_MAP longline.csv) </dev/null >out 2>err
    rc=$?
else
    limit="sanitizer build: no ulimit -v, time only"
    run analyze $NSDI_MAP longline.csv
fi
why=$(error_why 1 "longline.csv:3:;65536")
report "line-over-65536-bytes ($limit)" "$why"

err_case manifest-bad-json 1 "man_syntax/pfi-dataset.json:8:;JSON" analyze man_syntax
err_case manifest-unknown-key 1 "man_key/pfi-dataset.json;colour;unknown" analyze man_key
err_case manifest-unknown-mapping-field 1 "man_field/pfi-dataset.json;powr;unknown" analyze man_field
err_case manifest-version 1 "man_version/pfi-dataset.json;pfi_manifest;expected" analyze man_version

# ---- bad command line: exit 2 ----------------------------------------------------------------
err_case format-bogus 2 "--format;bogus;json" analyze --format bogus "$JIT"
err_case noise-rel-2 2 "--noise-rel;'2';expected" analyze --noise-rel 2 "$JIT"
err_case plot-pdf 2 "--plot;x.pdf;.png" analyze --plot x.pdf "$JIT"
[ -e x.pdf ] && bad plot-pdf-no-file "x.pdf was created"
err_case unknown-option 2 "--bogus" analyze --bogus "$JIT"
# Messages name the program: "pfi..." (getopt's default prefix would be argv[0] = "analyze").
run analyze --bogus "$JIT"
case $(head -n 1 err) in
pfi*) ok unknown-option-names-pfi ;;
*) bad unknown-option-names-pfi "stderr does not start with 'pfi': $(excerpt err)" ;;
esac
err_case missing-option-argument 2 "--format" analyze "$JIT" --format
err_case unknown-command 2 "bogus" bogus
err_case help-unknown-command 2 "bogus" help bogus
run
why=$(sanity)
[ -z "$why" ] && [ "$rc" -ne 2 ] && why="exit $rc, want 2"
[ -z "$why" ] && ! grep -q "usage: pfi" err && why="no usage on stderr: $(excerpt err)"
report no-command "$why"
# A seed must be stored as given (or refused), never wrapped to a negative number.
run analyze --format json --seed 18446744073709551615 "$JIT"
why=$(sanity)
if [ -z "$why" ] && [ "$rc" -eq 0 ]; then
    why=$(py seed-val out 18446744073709551615)
elif [ -z "$why" ] && [ "$rc" -ne 2 ]; then
    why="exit $rc, want 0 (seed stored) or 2 (seed refused)"
fi
report seed-max-uint64 "$why"

# ---- output not written: exit 3, no partial or temporary file --------------------------------
mkdir outdir outdir/existing
echo plain >afile
err_case output-dir-missing 3 "nodir/out.csv" analyze --format csv -o nodir/out.csv "$JIT"
[ -e nodir ] && bad output-dir-missing-nothing-created "nodir was created"
err_case output-parent-is-file 3 "afile/out.csv" analyze --format csv -o afile/out.csv "$JIT"
# The output path is a directory: the temporary is written, the rename fails.
run analyze --format csv -o outdir/existing "$JIT"
why=$(error_why 3 "outdir/existing")
[ -z "$why" ] && why=$(no_temp outdir)
report output-rename-fails "$why"
# A read-only directory (permission bits do not bind root; the cases above cover root).
mkdir rodir
chmod 555 rodir
if (: >rodir/probe) 2>/dev/null; then
    rm -f rodir/probe
    ok "output-read-only-dir (running as root: covered by output-rename-fails)"
else
    run analyze --format csv -o rodir/out.csv "$JIT"
    why=$(error_why 3 "rodir/out.csv")
    [ -z "$why" ] && [ -n "$(ls -A rodir)" ] && why="left in rodir: $(ls -A rodir)"
    report output-read-only-dir "$why"
fi
chmod 755 rodir
# stdout that cannot be written (disk full): exit 3 with a message, for every format.
if [ -w /dev/full ]; then
    for f in table csv json; do
        "$PFI" analyze --format "$f" "$NSDI" "$JIT" >/dev/full 2>err </dev/null
        rc=$?
        : >out
        report "stdout-full-$f" "$(error_why 3 "")"
    done
else
    bad stdout-full "/dev/full is missing: cannot test a failing standard output"
fi
# A failing figure: exit 3, no temporary left.
mkdir plotdir plotdir/x.png
run analyze --plot plotdir/x.png "$JIT"
why=$(sanity)
[ -z "$why" ] && [ "$rc" -ne 3 ] && why="exit $rc, want 3; stderr: $(excerpt err)"
[ -z "$why" ] && ! grep -qF "plotdir/x.png" err && why="stderr does not name the file: $(excerpt err)"
[ -z "$why" ] && why=$(no_temp plotdir)
report plot-unwritable "$why"
# A failed run leaves an existing output file untouched.
echo "previous result" >keep.csv
run analyze --format csv -o keep.csv nosuch.csv
why=$(error_why 1 "nosuch.csv")
[ -z "$why" ] && [ "$(cat keep.csv)" != "previous result" ] && why="keep.csv was changed"
report output-kept-on-error "$why"

# ---- good paths --------------------------------------------------------------------------------
run analyze "$NSDI" "$JIT"
why=$(success_why)
[ -z "$why" ] && ! grep -q "^$GROUPS_ALL sweep groups" out && why="no '$GROUPS_ALL sweep groups' summary: $(tail -n 5 out | tr '\n' '|')"
[ -z "$why" ] && ! grep -q "cifar100/shufflenetv2/1024/adadelta .* 2\.887 " out && why="no row for cifar100/shufflenetv2/1024/adadelta with PFI 2.887"
[ -z "$why" ] && ! grep -q "PFI" out && why="no table header"
report table-default "$why"
cp out table.txt

run analyze --format csv "$NSDI" "$JIT"
why=$(success_why)
[ -z "$why" ] && why=$(py csv-real out)
report csv-230-rows "$why"
cp out real.csv

run analyze --format csv
why=$(success_why)
[ -z "$why" ] && ! cmp -s out real.csv && why="output differs from analysing the two datasets explicitly"
[ -z "$why" ] && why=$(needs csv-230-rows)
report no-input-uses-embedded-datasets "$why"

run analyze --format json "$NSDI" "$JIT"
why=$(success_why)
[ -z "$why" ] && why=$(py json-real out)
report json-230-groups-known-value "$why"
cp out real.json

run analyze --points "$NSDI" "$JIT"
why=$(success_why)
[ -z "$why" ] && [ "$(wc -l <out)" -le "$(wc -l <table.txt)" ] && why="--points adds no lines"
[ -z "$why" ] && ! grep -q "power_above_reference" out && why="no excluded point listed"
[ -z "$why" ] && ! grep -q "line 453 .*power_above_reference" out && why="A40 sentiment140/8 point at line 453 not listed as power_above_reference"
report points "$why"

mkdir fig
for ext in png svg; do
    run analyze --plot "fig/out.$ext" "$JIT"
    why=$(success_why)
    [ -z "$why" ] && [ ! -s "fig/out.$ext" ] && why="fig/out.$ext not written"
    if [ -z "$why" ] && [ "$ext" = png ]; then
        magic=$(od -An -tx1 -N8 fig/out.png | tr -d ' \n')
        [ "$magic" = 89504e470d0a1a0a ] || why="not a PNG (first bytes $magic)"
    fi
    if [ -z "$why" ] && [ "$ext" = svg ]; then
        head -c 4096 fig/out.svg | grep -q "<svg" || why="no <svg element"
    fi
    [ -z "$why" ] && why=$(no_temp fig)
    report "plot-$ext" "$why"
done

mkdir res
echo "old content" >res/out.json
run analyze --format json -o res/out.json "$NSDI" "$JIT"
why=$(success_why)
[ -z "$why" ] && [ -s out ] && why="wrote to stdout as well: $(excerpt out)"
[ -z "$why" ] && why=$(py json-count res/out.json $GROUPS_ALL)
[ -z "$why" ] && ! cmp -s res/out.json real.json && why="differs from the stdout output"
[ -z "$why" ] && why=$(no_temp res)
[ -z "$why" ] && [ "$(find res -type f | sort | tr '\n' ' ')" != "res/out.json " ] &&
    why="unexpected files: $(find res -type f | tr '\n' ' ')"
[ -z "$why" ] && why=$(needs json-230-groups-known-value)
report output-file-atomic "$why"

run analyze --format csv --output res/out.csv "$NSDI" "$JIT"
why=$(success_why)
[ -z "$why" ] && ! cmp -s res/out.csv real.csv && why="--output file differs from stdout output"
[ -z "$why" ] && why=$(no_temp res)
[ -z "$why" ] && why=$(needs csv-230-rows)
report output-long-option "$why"

# help and version
run --help
why=$(success_why)
[ -z "$why" ] && ! grep -q "^usage: pfi" out && why="no usage on stdout"
[ -z "$why" ] && ! grep -q "analyze" out && why="does not list analyze"
report "help pfi --help" "$why"
run -h
why=$(success_why)
[ -z "$why" ] && ! grep -q "^usage: pfi" out && why="no usage on stdout"
report "help pfi -h" "$why"
run analyze --help
why=$(success_why)
[ -z "$why" ] && ! grep -q "^usage: pfi analyze" out && why="no usage on stdout"
[ -z "$why" ] && ! grep -q -- "--noise-rel" out && why="--noise-rel not documented"
[ -z "$why" ] && ! grep -q -- "--plot" out && why="--plot not documented"
report "help pfi analyze --help" "$why"
cp out analyze_help.txt
run analyze -h
why=$(success_why)
[ -z "$why" ] && ! cmp -s out analyze_help.txt && why="differs from --help"
[ -z "$why" ] && why=$(needs "help pfi analyze --help")
report "help pfi analyze -h" "$why"
run help analyze
why=$(success_why)
[ -z "$why" ] && ! cmp -s out analyze_help.txt && why="differs from pfi analyze --help"
[ -z "$why" ] && why=$(needs "help pfi analyze --help")
report "help pfi help analyze" "$why"
run version
why=$(success_why)
[ -z "$why" ] && ! grep -q "^pfi [0-9][0-9.]*" out && why="stdout: $(excerpt out)"
report "version" "$why"

# ---- the hand-made dataset, through its manifest ------------------------------------------------
run analyze --format json "$HAND"
why=$(success_why)
[ -z "$why" ] && why=$(py json-handmade out)
report handmade-json "$why"
cp out handmade.json
run analyze --format json "$HAND/jobs.csv"
why=$(success_why)
[ -z "$why" ] && ! cmp -s out handmade.json && why="a file with the manifest beside it differs from its directory"
[ -z "$why" ] && why=$(needs handmade-json)
report handmade-file-uses-manifest-beside-it "$why"
run analyze --format csv "$HAND"
why=$(success_why)
[ -z "$why" ] && why=$(py csv-count out 3)
report handmade-csv "$why"
run analyze --points "$HAND"
why=$(success_why)
[ -z "$why" ] && ! grep -q "500 W .*missing_power" out && why="the N/A run is not listed as missing_power"
[ -z "$why" ] && ! grep -q "600 W .*(merged)" out && why="the duplicate 600 W caps are not shown merged"
[ -z "$why" ] && ! grep -q "PFI undefined" out && why="the one-run group's undefined PFI is not explained"
[ -z "$why" ] && ! grep -q "class moe-pt" out && why="no per-class summary"
report handmade-points "$why"

# ---- seeds and threads ---------------------------------------------------------------------------
run analyze --format csv --noise-rel 0.01 --seed 1 "$JIT"
why=$(success_why)
cp out seed1a.csv
run analyze --format csv --noise-rel 0.01 --seed 1 "$JIT"
[ -z "$why" ] && why=$(success_why)
cp out seed1b.csv
run analyze --format csv --noise-rel 0.01 --seed 2 "$JIT"
[ -z "$why" ] && why=$(success_why)
cp out seed2.csv
run analyze --format csv --noise-rel 0.01 --seed 1 --threads 1 "$JIT"
[ -z "$why" ] && why=$(success_why)
cp out seed1t.csv
if [ -n "$why" ]; then
    bad seed "$why"
else
    why=$(py seed-same seed1a.csv seed1b.csv)
    [ -z "$why" ] && ! cmp -s seed1a.csv seed1b.csv && why="outputs differ beyond the CI"
    report same-seed-same-ci "$why"
    report different-seed-different-ci "$(py seed-differ seed1a.csv seed2.csv)"
    why=""
    cmp -s seed1a.csv seed1t.csv || why="--threads 1 changes the output"
    [ -z "$why" ] && why=$(needs same-seed-same-ci)
    report threads-do-not-change-ci "$why"
fi

# ---- standard input --------------------------------------------------------------------------------
# shellcheck disable=SC2086
run_stdin "$A40" analyze $NSDI_MAP --format csv -
why=$(success_why)
cp out stdin.csv
# shellcheck disable=SC2086
run analyze $NSDI_MAP --format csv "$A40"
[ -z "$why" ] && why=$(success_why)
[ -z "$why" ] && why=$(py same-but-file stdin.csv out $GROUPS_A40)
report stdin "$why"
run_stdin "$JIT/A40+resnet50+gpu0.csv" analyze --manifest "$JIT/pfi-dataset.json" --format csv -
why=$(success_why)
[ -z "$why" ] && why=$(py csv-count out 1)
report stdin-with-manifest "$why"
# CRLF line ends and a UTF-8 byte order mark change nothing.
{ printf '\357\273\277'; sed 's/$/\r/' "$A40"; } >crlf.csv
# shellcheck disable=SC2086
run analyze $NSDI_MAP --format csv crlf.csv
why=$(success_why)
[ -z "$why" ] && why=$(py same-but-file out stdin.csv $GROUPS_A40)
report crlf-bom "$why"

# ---- locale: a decimal-comma locale must not change one output byte ----------------------------------
LOC=de_DE.UTF-8
if ! locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\{0,1\}8$' ||
    [ "$(LC_ALL=$LOC locale decimal_point 2>/dev/null)" != "," ]; then
    bad locale "the $LOC locale is not installed, so the locale checks cannot run; run $SRC/scripts/deps.sh (as root), which generates it (check with: locale -a)"
else
    for var in LC_ALL LC_NUMERIC LANG; do
        for f in csv json table; do
            [ "$var" = LANG ] && [ "$f" = table ] && continue
            ref=real.$f
            [ "$f" = table ] && ref=table.txt
            (
                unset LC_ALL LC_NUMERIC LANG
                export "$var=$LOC"
                exec "$PFI" analyze --format "$f" "$NSDI" "$JIT"
            ) </dev/null >out 2>err
            rc=$?
            why=$(success_why)
            [ -z "$why" ] && ! cmp -s out "$ref" && why="output differs: $(cmp out "$ref" 2>&1 | head -n 1)"
            [ -z "$why" ] && why=$(needs csv-230-rows json-230-groups-known-value table-default)
            report "locale-$var-$f" "$why"
        done
    done
    # With confidence intervals (more numbers printed), and reading from stdin.
    run analyze --format csv --noise-rel 0.01 "$JIT"
    cp out ci_c.csv
    (LC_ALL=$LOC && export LC_ALL && exec "$PFI" analyze --format csv --noise-rel 0.01 "$JIT") \
        </dev/null >out 2>err
    rc=$?
    why=$(success_why)
    [ -z "$why" ] && why=$(py seed-same ci_c.csv out)
    [ -z "$why" ] && ! cmp -s out ci_c.csv && why="CI output differs under LC_ALL=$LOC"
    report locale-ci "$why"
    # shellcheck disable=SC2086
    # shellcheck disable=SC2002 # a pipe on purpose
    (LC_ALL=$LOC && export LC_ALL && cat "$A40" | "$PFI" analyze $NSDI_MAP --format csv -) >out 2>err
    rc=$?
    why=$(success_why)
    [ -z "$why" ] && ! cmp -s out stdin.csv && why="stdin parsing differs under LC_ALL=$LOC"
    [ -z "$why" ] && why=$(needs stdin)
    report locale-stdin "$why"
fi

end=$(date +%s)
echo "# $passed passed, $failed failed, $((end - start)) s"
exit $fail
