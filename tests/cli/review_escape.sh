#!/bin/sh
# User-review regressions: a control character in a group name (ESC, a newline in a quoted
# field) is escaped as \xNN in human tables (analyze, predict), the way error messages are,
# so it never reaches the terminal raw or breaks a row; CSV keeps the exact bytes, quoted.
# The same in the tables of pfi runs (a stored class), pfi control status and pfi report (an
# audit log's strategy, note, bound and job names), pfi simulate and pfi stats (a library's job
# class; simulate's JSON stays JSON) and pfi allocate --topology (level names in the levels
# table, "bound by" and --explain).
# Usage: review_escape.sh PFI_BINARY SOURCE_DIR     (ctest cli_review_escape)
set -u
PFI=$1
SRC=$2
fail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-review-escape.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
ESC=$(printf '\033')
printf 'g,cap,p,t\na\033[31mRED,400,400,100\na\033[31mRED,300,300,90\n' >"$T/esc.csv"
check analyze-esc 0 "$PFI" analyze --group g --cap cap --power p --throughput t "$T/esc.csv"
if grep -q "$ESC" "$T/out"; then echo "FAIL analyze-esc-raw: an ESC byte in the table"; fail=1
else echo "ok   analyze-esc-raw"; fi
grep_out analyze-esc-escaped 'a\\x1B\[31mRED' "$T/out"
check analyze-esc-csv 0 "$PFI" analyze --group g --cap cap --power p --throughput t \
    --format csv "$T/esc.csv"
grep_out analyze-esc-csv-exact "a${ESC}\[31mRED" "$T/out"
# a quoted name with a newline: one table row per group, the newline shown as \x0A
printf 'g,cap,p,t\n"a\nb",400,400,100\n"a\nb",300,300,90\n' >"$T/nl.csv"
check analyze-nl 0 "$PFI" analyze --group g --cap cap --power p --throughput t "$T/nl.csv"
grep_out analyze-nl-escaped 'a\\x0Ab ' "$T/out"
if grep -q '^b ' "$T/out"; then echo "FAIL analyze-nl-row: the newline broke the row"; cat "$T/out"; fail=1
else echo "ok   analyze-nl-row"; fi

no_esc() { # no_esc NAME FILE: no raw ESC byte in FILE
    if grep -q "$ESC" "$2"; then echo "FAIL $1: an ESC byte in the table"; fail=1
    else echo "ok   $1"; fi
}

# pfi runs: a class stored with an ESC in it (a name from the store, a file)
check runs-store 0 "$PFI" ingest --db "$T/s.db" --group g --cap 300 \
    --class "$(printf 'c\033[31mX')" --telemetry "$SRC/tests/data/ergonomics/smi.csv"
check runs-esc 0 "$PFI" runs --db "$T/s.db"
no_esc runs-esc-raw "$T/out"
grep_out runs-esc-escaped 'c\\x1B\[31mX' "$T/out"

# pfi control status: an audit log (another writer's) with ESC in its texts
python3 - "$T/a.db" <<'PY' || { echo "FAIL audit log with control characters"; fail=1; }
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL, wall_s REAL,"
           " event INTEGER, budget_w REAL, alloc_budget_w REAL, measured_w REAL, reserved_w REAL,"
           " predicted_w REAL, correction_w REAL, ref_w REAL, tput_tok_s REAL, cap_sum_w REAL,"
           " strategy TEXT, agents_up INTEGER, agents INTEGER, jobs INTEGER, gpus INTEGER,"
           " decreases INTEGER, increases INTEGER, unconfirmed INTEGER, telemetry TEXT,"
           " restored INTEGER, note TEXT, faults TEXT, bound TEXT, ramp_limited INTEGER)")
db.execute("CREATE TABLE ctl_jobs(period INTEGER, job TEXT, class TEXT, gpus INTEGER, pfi REAL,"
           " source TEXT, cap_w REAL, ref_power_w REAL, ref_tput REAL, power_w REAL,"
           " pred_power_w REAL, tput REAL)")
db.execute("INSERT INTO ctl_periods(run, t_s, wall_s, event, strategy, agents_up, agents, note,"
           " bound) VALUES(1, 0, 1e9, 0, 'eq\x1bual', 1, 1, 'job j\x1b[2J held', 'rack r\x1b1')")
db.execute("INSERT INTO ctl_jobs(period, job, class, gpus, source) VALUES(1, 'j\x1b[2J',"
           " 'c\rX', 8, 'prior')")
db.commit()
PY
check status-esc 0 "$PFI" control status --db "$T/a.db"
no_esc status-esc-raw "$T/out"
if grep -q "$(printf '\r')" "$T/out"; then echo "FAIL status-cr-raw: a CR in the table"; fail=1
else echo "ok   status-cr-raw"; fi
grep_out status-esc-strategy 'strategy eq\\x1Bual' "$T/out"
grep_out status-esc-note 'job j\\x1B\[2J held' "$T/out"
grep_out status-esc-bound 'rack r\\x1B1' "$T/out"
grep_out status-esc-job '^j\\x1B\[2J ' "$T/out"
# pfi report's summary line names the log's strategy
check report-esc 0 "$PFI" report "$T/a.db" -o "$T/a.svg"
no_esc report-esc-raw "$T/out"
grep_out report-esc-strategy 'a.db: eq\\x1Bual, 1 periods' "$T/out"

# pfi simulate: a library whose job class holds an ESC and a quote
"$PFI" library generate --quiet "$T/lib" || { echo "FAIL library generate"; fail=1; }
sed "s/,dense,/,\"d\"\"e${ESC}x\",/" "$T/lib/runs.csv" >"$T/runs.csv" && mv "$T/runs.csv" "$T/lib/runs.csv"
check simulate-esc 0 "$PFI" simulate --library "$T/lib" --workloads 4 --jobs 10 \
    --reductions 30% --mix random --quiet
no_esc simulate-esc-raw "$T/out"
grep_out simulate-esc-class 'd"e\\x1Bx ' "$T/out"
check simulate-esc-json 0 "$PFI" simulate --library "$T/lib" --workloads 4 --jobs 10 \
    --reductions 30% --mix random --quiet --format json
python3 - "$T/out" <<'PY' && echo "ok   simulate-esc-json-parses" || { echo "FAIL simulate-esc-json-parses"; fail=1; }
import json, sys
d = json.load(open(sys.argv[1]))
assert 'd"e\x1bx' in d["cells"][0]["retained"], d["cells"][0]["retained"]
PY
check stats-esc 0 "$PFI" stats "$T/lib"
no_esc stats-esc-raw "$T/out"
grep_out stats-esc-class '^  d"e\\x1Bx ' "$T/out"

# pfi allocate --topology: level names with an ESC, in the levels table, "bound by" and
# --explain (r1's 2000 W binds: its jobs take 3200 W at their lowest caps)
printf 'fe\033ed s\033ite - 20000\nrack r1 s\033ite 2000\nrack r2 s\033ite 9000\n' >"$T/topo.txt"
check allocate-topo-esc 0 "$PFI" allocate --topology "$T/topo.txt" --explain \
    "$SRC/examples/jobs_tree.csv"
no_esc allocate-topo-esc-raw "$T/out"
grep_out allocate-topo-esc-level '^fe\\x1Bed  *s\\x1Bite  *- ' "$T/out"
grep_out allocate-topo-esc-parent '^rack  *r1  *s\\x1Bite ' "$T/out"
# Names that are not UTF-8 (a 0xFF byte) in JSON outputs: the JSON stays UTF-8 and whole, each
# invalid byte U+FFFD (docs/commands/pfi-analyze.md), never a dropped member, an empty key
# object, a truncated document or the raw byte.
utf8_json() { # utf8_json NAME FILE PYTHON_EXPR: FILE is strict UTF-8 JSON d and EXPR holds
    if /usr/bin/python3 - "$2" "$3" <<'PY'; then echo "ok   $1"; else echo "FAIL $1"; cat "$2"; fail=1; fi
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
printf 'g,c,cap,p,t\nb\377x,k\377,400,400,100\nb\377x,k\377,300,300,90\n' >"$T/ff.csv"
check analyze-ff-json 0 "$PFI" analyze --group g --class c --cap cap --power p --throughput t \
    --format json "$T/ff.csv"
utf8_json analyze-ff-json-key "$T/out" \
    'd["groups"][0]["key"] == {"g": "b\ufffdx"} and d["groups"][0]["job_class"] == "k\ufffd" and list(d["summary"]["by_class"]) == ["k\ufffd"]'
check runs-ff-store 0 "$PFI" ingest --db "$T/ff.db" --group g --cap 300 \
    --class "$(printf 'c\377')" --telemetry "$SRC/tests/data/ergonomics/smi.csv"
check runs-ff-json 0 "$PFI" runs --db "$T/ff.db" --format json
utf8_json runs-ff-json-class "$T/out" 'd[0]["group"] == "g" and d[0]["job_class"] == "c\ufffd"'
printf 'job,cap_w,power_w,tput_tok_s\nj\377,200,1600,100\nj\377,400,3200,150\n' >"$T/ffjobs.csv"
check allocate-ff-json 0 "$PFI" allocate --budget-w 2400 --format json "$T/ffjobs.csv"
utf8_json allocate-ff-json-name "$T/out" '[j["job"] for j in d["jobs"]] == ["j\ufffd"]'
# control status --json: the texts exact (ESC as \u001b by the JSON writer, not \xNN), a job
# name that is not UTF-8 with U+FFFD
python3 - "$T/a.db" <<'PY' || { echo "FAIL audit log with a 0xFF job"; fail=1; }
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE ctl_jobs SET job = CAST(? AS TEXT)", (b"j\xff",))
db.commit()
PY
check status-ff-json 0 "$PFI" control status --db "$T/a.db" --json
utf8_json status-ff-json-texts "$T/out" 'd["strategy"] == "eq\x1bual" and d["bound"] == "rack r\x1b1" and [j["job"] for j in d["jobs"]] == ["j\ufffd"]'
# --group refuses invalid UTF-8 as it refuses control characters (exit 2, saying why)
check ingest-group-ff 2 "$PFI" ingest --db "$T/ff.db" --group "$(printf 'g\377')" --cap 300 \
    --telemetry "$SRC/tests/data/ergonomics/smi.csv"
grep_out ingest-group-ff-says "must be UTF-8 text" "$T/err"
exit $fail
