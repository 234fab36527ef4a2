#!/bin/sh
# One wording for every command (pfi(1) DIAGNOSTICS): a bad flag or a bad value given to any
# verb or subcommand is "pfi: VERB[ SUB]: ..." with exit 2; `pfi help A B` is `pfi A B
# --help`; `pfi version` takes no options; pfid --check refuses what start refuses (an
# emulate spec); openadr poll checks its URL up front and words its unreachable and
# credentials cases truly. Usage: wording.sh PFI_BINARY PFID_BINARY SOURCE_DIR
set -u
PFI=$1
PFID=$2
fail=0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
export PFI_AGENT_BIN="$PFID"
no_grep() { # no_grep NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "FAIL $1: '$2' in $3"; cat "$3"; fail=1; else echo "ok   $1"; fi
}
# prefix NAME COMMAND_WORDS EXPECTED_EXIT ARGS...: every line of stderr that says pfi starts
# with "pfi: COMMAND_WORDS: " and the first line is one
prefix() {
    name=$1 words=$2 want=$3
    shift 3
    check "$name" "$want" "$PFI" "$@"
    first=$(head -n 1 "$T/err")
    case $first in
    "pfi: $words: "*) echo "ok   $name-prefix" ;;
    *) echo "FAIL $name-prefix: want 'pfi: $words: ...', got '$first'"; fail=1 ;;
    esac
}

# --- every verb and subcommand: an unknown flag ------------------------------------------
for v in analyze stats fit predict library ingest runs allocate simulate sweep restore probe \
    control schedule openadr report slurm demo version; do
    prefix "bogus-$v" "$v" 2 "$v" --bogus-flag
done
prefix bogus-stats-compare "stats compare" 2 stats compare --bogus-flag
prefix bogus-library-generate "library generate" 2 library generate --bogus-flag
prefix bogus-control-status "control status" 2 control status --bogus-flag
prefix bogus-openadr-poll "openadr poll" 2 openadr poll --bogus-flag
prefix bogus-report-settlement "report --settlement" 2 report --settlement x --bogus-flag
prefix bogus-report-job "report --job" 2 report --job 1 --bogus-flag
prefix bogus-slurm-prolog "slurm prolog" 2 slurm prolog --bogus-flag
prefix bogus-slurm-epilog "slurm epilog" 2 slurm epilog --bogus-flag
prefix bogus-slurm-admit "slurm admit" 2 slurm admit --bogus-flag
prefix bogus-demo-cluster "demo cluster" 2 demo cluster --bogus-flag
prefix bogus-demo-grid "demo grid-event" 2 demo grid-event --bogus-flag
prefix library-subcommand library 2 library bogus
prefix openadr-vtn-not-poll openadr 2 openadr --vtn http://x
grep_out openadr-vtn-points-to-poll "pfi openadr poll" "$T/err"

# --- bad values and conflicts: the same prefix --------------------------------------------
printf 't_s,gpu,power_w\n0,0,100\n1,0,100\n' > "$T/tel.csv"
prefix allocate-both allocate 2 allocate --budget-w 1000 --reduction 30% "$T/tel.csv"
prefix ingest-cap ingest 2 ingest --db "$T/s.db" --group g --cap 1e308 --telemetry "$T/tel.csv"
prefix ingest-twice ingest 2 ingest --db "$T/s.db" --group g --cap 300 --telemetry "$T/tel.csv" \
    --telemetry "$T/tel.csv"
prefix ingest-format ingest 2 ingest --db "$T/s.db" --group g --cap 300 --telemetry "$T/tel.csv" \
    --format bogus
prefix ingest-tz ingest 2 ingest --db "$T/s.db" --group g --cap 300 --telemetry "$T/tel.csv" \
    --timezone Mars/Base
prefix probe-emulate probe 2 probe --backend emulated --emulate 8
: > "$T/file"
prefix demo-out-file "demo grid-event" 2 demo grid-event --out "$T/file"
no_grep demo-out-no-raw-mkdir "mkdir:" "$T/err"

# --- help: pfi help A B is pfi A B --help; version --------------------------------------
for c in "version" "control status" "report --settlement" "stats compare" "openadr poll" \
    "library generate" "slurm admit" "analyze"; do
    # shellcheck disable=SC2086
    "$PFI" help $c > "$T/h1" 2>&1
    r1=$?
    # shellcheck disable=SC2086
    "$PFI" $c --help > "$T/h2" 2>&1
    r2=$?
    if [ "$r1" -eq 0 ] && [ "$r2" -eq 0 ] && cmp -s "$T/h1" "$T/h2"; then
        echo "ok   help-$c"
    else
        echo "FAIL help-$c: 'pfi help $c' (exit $r1) differs from 'pfi $c --help' (exit $r2)"
        diff "$T/h1" "$T/h2" | head -5; fail=1
    fi
done
"$PFI" help control > "$T/h3" 2>&1
if cmp -s "$T/h3" "$T/h1"; then echo "FAIL help-sub-not-parent: same text"; fail=1; fi
check version-help 0 "$PFI" version -h
grep_out version-help-usage "usage: pfi version" "$T/out"
check version-plain 0 "$PFI" version
grep_out version-plain-text "^pfi [0-9]" "$T/out"
prefix version-extra version 2 version extra

# --- pfid --check refuses what start refuses ---------------------------------------------
for spec in bogus=1 gpus=100000; do
    check "pfid-check-$spec" 2 "$PFID" --check -b emulated --emulate "$spec" -j "$T/jr"
    no_grep "pfid-check-$spec-not-valid" "configuration valid" "$T/out"
    check "pfid-start-$spec" 2 timeout 20 "$PFID" -b emulated --emulate "$spec" -j "$T/jr" --listen 127.0.0.1:0
done
check pfid-check-good 0 "$PFID" --check -b emulated --emulate gpus=2 -j "$T/jr"

# --- openadr poll: URL up front, the truth about schedules and credentials --------------
(umask 077 && printf 'client_id=a\nclient_secret=b\n' > "$T/cred")
prefix openadr-bad-url "openadr poll" 2 openadr poll --vtn notaurl --program p --credentials \
    "$T/cred" --epoch 1700000000 --schedule-out "$T/sched.json" --once
grep_out openadr-bad-url-says "vtn" "$T/err"
check openadr-devnull 1 "$PFI" openadr poll --vtn http://127.0.0.1:1 --program p --credentials \
    /dev/null --epoch 1700000000 --schedule-out "$T/sched.json" --once
no_grep openadr-devnull-no-chmod "chmod" "$T/err"
check openadr-unreachable 5 "$PFI" openadr poll --vtn http://127.0.0.1:1 --program p \
    --credentials "$T/cred" --epoch 1700000000 --schedule-out "$T/sched.json" --once
grep_out openadr-unreachable-says-none "does not exist" "$T/err"
no_grep openadr-unreachable-no-phantom "keeping the last schedule" "$T/err"

# --- pfi demo cluster: its arguments checked before an agent or Prometheus starts ---------
prefix demo-cluster-strategy "demo cluster" 2 demo cluster --strategy bogus --out "$T/demo"
grep_out demo-cluster-strategy-lists "bad value 'bogus': expected oracle, equal, " "$T/err"
if [ -e "$T/demo" ] || [ "$(wc -l <"$T/err")" -ne 1 ]; then
    echo "FAIL demo-cluster-strategy-first: started before refusing"; cat "$T/err"; fail=1
else echo "ok   demo-cluster-strategy-first"; fi
prefix demo-cluster-extra "demo cluster" 2 demo cluster extra
grep_out demo-cluster-extra-says "unexpected argument 'extra'" "$T/err"

# --- binary inputs: the shared wording of src/cli/input.c, the file named once ------------
printf 'ELF\001\000\000\000x\n' >"$T/bin"
check schedule-dev-zero 1 "$PFI" schedule /dev/zero
grep_out schedule-dev-zero-says "^pfi: schedule: /dev/zero: not text (a NUL byte at offset 0)" "$T/err"
check tlog-binary 1 "$PFI" ingest --dry-run --telemetry "$T/tel.csv" --throughput-log "$T/bin"
grep_out tlog-binary-says "^pfi: ingest: --throughput-log $T/bin: not text (a NUL byte at offset 4)" \
    "$T/err"
no_grep tlog-binary-no-formats "no throughput interval found" "$T/err"

# --- a standard output that cannot be written: exit 3 and one line, for every verb -------
# (README's exit codes: 3 output not written; the verbs' own output and their --help alike)
full() { # full NAME ARGS...: pfi ARGS > /dev/full exits 3 saying "standard output: cannot write"
    name=$1
    shift
    "$PFI" "$@" >/dev/full 2>"$T/err"
    got=$?
    if [ "$got" -ne 3 ]; then
        echo "FAIL $name: exit $got, want 3"; cat "$T/err"; fail=1
    elif ! grep -q "^pfi: .*standard output: cannot write: No space left on device" "$T/err"; then
        echo "FAIL $name: no 'standard output: cannot write' line"; cat "$T/err"; fail=1
    elif [ "$(grep -c 'cannot write' "$T/err")" -ne 1 ]; then
        echo "FAIL $name: said more than once"; cat "$T/err"; fail=1
    else
        echo "ok   $name"
    fi
}
if [ -w /dev/full ]; then
    for v in analyze stats fit predict library ingest runs allocate simulate sweep restore probe \
        control schedule openadr report slurm demo version; do
        full "full-help-$v" "$v" --help
    done
    full full-help-control-status control status --help
    full full-ingest-dry-run ingest --dry-run --telemetry "$T/tel.csv"
    python3 - "$T/audit.db" <<'PY' || { echo "FAIL audit log for /dev/full"; fail=1; }
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL, wall_s REAL,"
           " event INTEGER, budget_w REAL, alloc_budget_w REAL, measured_w REAL, reserved_w REAL,"
           " predicted_w REAL, correction_w REAL, ref_w REAL, tput_tok_s REAL, cap_sum_w REAL,"
           " strategy TEXT, agents_up INTEGER, agents INTEGER, jobs INTEGER, gpus INTEGER,"
           " decreases INTEGER, increases INTEGER, unconfirmed INTEGER, telemetry TEXT,"
           " restored INTEGER, note TEXT)")
db.execute("CREATE TABLE ctl_jobs(period INTEGER, job TEXT, class TEXT, gpus INTEGER, pfi REAL,"
           " source TEXT, cap_w REAL, ref_power_w REAL, ref_tput REAL, power_w REAL,"
           " pred_power_w REAL, tput REAL)")
for i in range(4):
    db.execute("INSERT INTO ctl_periods(run, t_s, wall_s, event, budget_w, measured_w, strategy,"
               " agents_up, agents) VALUES(1, ?, ?, ?, 1000, 900, 'equal', 1, 1)",
               (0.5 * i, 1e9 + 0.5 * i, 1 if i == 2 else 0))
db.commit()
PY
    full full-report-json report "$T/audit.db" --json
    full full-report-png report "$T/audit.db" -o "$T/x.png"
    full full-control-status control status --db "$T/audit.db"
    full full-control-status-json control status --db "$T/audit.db" --json
else
    echo "FAIL full: /dev/full is missing: cannot test a failing standard output"; fail=1
fi

exit $fail
