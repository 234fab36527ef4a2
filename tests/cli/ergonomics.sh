#!/bin/sh
# End-to-end checks of what a new user met: read-only store readers, error messages that say
# what was expected, line numbers of over-long lines, escaped input text, byte order marks,
# wording. Usage: ergonomics.sh PFI_BINARY SOURCE_DIR
set -u
PFI=$1
D=$2/tests/data/ergonomics
fail=0
T=$(mktemp -d)
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
no_grep() { # no_grep NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "FAIL $1: '$2' in $3"; cat "$3"; fail=1; else echo "ok   $1"; fi
}
same() { # same NAME FILE_A FILE_B
    if cmp -s "$2" "$3"; then echo "ok   $1"; else echo "FAIL $1: $2 changed"; fail=1; fi
}
ingest() { "$PFI" ingest --db "$T/s.db" "$@"; }

# --- 1. Readers open the store read-only -------------------------------------------------
check store-make 0 ingest --group g --cap 300 --telemetry "$D/smi.csv"
check store-make2 0 ingest --group g --cap 200 --telemetry "$D/smi.csv"
chmod 644 "$T/s.db"
cp "$T/s.db" "$T/before.db"
check runs-reads 0 "$PFI" runs --db "$T/s.db"
check runs-json-reads 0 "$PFI" runs --db "$T/s.db" --format json
check analyze-db-reads 0 "$PFI" analyze --db "$T/s.db" --format csv
same store-untouched-by-readers "$T/before.db" "$T/s.db"
# As a user who may not write the store (root ignores file modes: run as nobody).
as_user=""
if [ "$(id -u)" -eq 0 ]; then
    if command -v setpriv >/dev/null 2>&1 && setpriv --reuid=nobody --regid=nogroup \
        --clear-groups true 2>/dev/null; then
        as_user="setpriv --reuid=nobody --regid=nogroup --clear-groups"
    fi
else
    chmod 444 "$T/s.db"
    as_user="env"
fi
if [ -n "$as_user" ]; then
    check runs-unwritable-store 0 $as_user "$PFI" runs --db "$T/s.db"
    grep_out runs-unwritable-rows "^g " "$T/out"
    check analyze-unwritable-store 0 $as_user "$PFI" analyze --db "$T/s.db" --format csv
    chmod 644 "$T/s.db"
else
    echo "skip runs-unwritable-store (root without setpriv)"
fi
same store-untouched-by-other-user "$T/before.db" "$T/s.db"
: >"$T/empty.db"
check runs-empty-file 1 "$PFI" runs --db "$T/empty.db"
grep_out runs-empty-file-msg "not a pfi store" "$T/err"
check analyze-empty-file 1 "$PFI" analyze --db "$T/empty.db"
grep_out analyze-empty-file-msg "not a pfi store" "$T/err"
[ ! -s "$T/empty.db" ] && echo "ok   empty-file-untouched" || { echo "FAIL empty-file-untouched"; fail=1; }
# another program's SQLite file (and one in WAL mode) given to a writer: refused, and left
# byte for byte as it was (was: switched to WAL and back, its change counter moved)
for mode in delete wal; do
    /usr/bin/python3 -c "import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode = ' + sys.argv[2])
c.execute('CREATE TABLE t(x)'); c.execute('INSERT INTO t VALUES (1)'); c.commit(); c.close()" \
        "$T/foreign-$mode.db" "$mode"
    cp "$T/foreign-$mode.db" "$T/foreign-$mode.before"
    check ingest-foreign-$mode 3 "$PFI" ingest --db "$T/foreign-$mode.db" --group g --cap 300 \
        --telemetry "$D/smi.csv"
    grep_out ingest-foreign-$mode-msg "not a pfi store" "$T/err"
    same ingest-foreign-$mode-untouched "$T/foreign-$mode.before" "$T/foreign-$mode.db"
done
check runs-missing 1 "$PFI" runs --db "$T/none.db"
grep_out runs-missing-msg "No such file" "$T/err"
[ ! -e "$T/none.db" ] && echo "ok   missing-not-created" || { echo "FAIL missing-not-created"; fail=1; }

# --- 2. Every error says what was expected ----------------------------------------------
mkdir "$T/adir"
check telemetry-dir 1 ingest --group g --cap 300 --telemetry "$T/adir"
grep_out telemetry-dir-msg "adir: is a directory" "$T/err"
check tlog-dir 1 ingest --group g --cap 300 --telemetry "$D/smi.csv" --throughput-log "$T/adir"
grep_out tlog-dir-msg "adir: is a directory" "$T/err"
check group-empty 2 ingest --group "" --cap 300 --telemetry "$D/smi.csv"
grep_out group-empty-msg "\-\-group: bad value .*: expected a sweep group name" "$T/err"
check group-control 2 ingest --group "$(printf 'a\033b')" --cap 300 --telemetry "$D/smi.csv"
grep_out group-control-msg "\-\-group: bad value .*: expected a sweep group name" "$T/err"
# No error line ends right after the file name.
for f in "$T"/err; do no_grep errors-not-empty ': $' "$f"; done

# --- 3. An over-long line is reported with its own number --------------------------------
long=$(awk 'BEGIN { s = "x"; for (i = 0; i < 17; i++) s = s s; print s }') # 128 KiB
{ head -5 "$D/smi.csv"; echo "$long"; } >"$T/hugeline.csv"
check csv-long-line 1 ingest --group g --cap 300 --telemetry "$T/hugeline.csv"
grep_out csv-long-line-number "hugeline.csv:6: line longer than" "$T/err"
{ head -40 "$D/dcgmi_bom.txt"; echo "GPU 0 $long"; } >"$T/dg_huge.txt"
check dcgmi-long-line 1 ingest --group g --cap 300 --interval 1 --telemetry "$T/dg_huge.txt"
grep_out dcgmi-long-line-number "dg_huge.txt:41: line longer than" "$T/err"
{ echo "tput=1"; echo "tput=2"; echo "tput=3 $long"; } >"$T/hugelog.log"
check tlog-long-line 0 ingest --dry-run --telemetry "$D/smi.csv" \
    --throughput-log "$T/hugelog.log" --throughput-regex 'tput=(?<throughput>[0-9]+)'
grep_out tlog-long-line-number "longer than 65536 bytes skipped (first at line 3)" "$T/out"

# --- 4. Input text is escaped, and tool notes are capped ---------------------------------
check escape-dcgmi 1 ingest --group g --cap 300 --format dcgmi-dmon --telemetry "$D/escape.txt"
grep_out escape-shown 'hello\\x1B\[2J\\x1B\]0;pwned\\x07 world' "$T/err"
if LC_ALL=C grep -q "$(printf '\033')" "$T/err" "$T/out"; then
    echo "FAIL escape-no-raw-esc"; fail=1; else echo "ok   escape-no-raw-esc"; fi
# (a dcgmi header, then junk: the reader is right, and quotes only the first lines)
awk 'BEGIN { print "#Entity   POWER"; print "ID"
             for (i = 0; i < 40; i++) printf "junk \007\033[31m %d\n", i }' >"$T/junk.txt"
check tool-notes-capped 1 ingest --group g --cap 300 --format dcgmi-dmon --telemetry "$T/junk.txt"
[ "$(grep -c 'the tool reported:' "$T/err")" -le 6 ] && echo "ok   tool-notes-count" \
    || { echo "FAIL tool-notes-count: $(grep -c 'the tool reported:' "$T/err")"; fail=1; }
grep_out tool-notes-rest "and 35 more lines the tool reported" "$T/err"
printf 'timestamp, index, power.draw [W]\n2025/05/14 23:50:00.000, 0, \033[2J W\n' >"$T/cell.csv"
check escape-cell 1 ingest --group g --cap 300 --telemetry "$T/cell.csv"
if LC_ALL=C grep -q "$(printf '\033')" "$T/err" "$T/out"; then
    echo "FAIL escape-cell-no-raw-esc"; fail=1; else echo "ok   escape-cell-no-raw-esc"; fi

# --- 5. A byte order mark is dropped in every reader ------------------------------------
check bom-dcgmi 0 ingest --dry-run --interval 1 --telemetry "$D/dcgmi_bom.txt"
grep_out bom-dcgmi-format "format dcgmi-dmon, 80 rows" "$T/out"
check bom-dmon 0 ingest --dry-run --telemetry "$D/dmon_bom.txt"
grep_out bom-dmon-format "format dmon, 5 rows" "$T/out"
check bom-prom 0 ingest --dry-run --telemetry "$D/scrape_bom.prom"
grep_out bom-prom-format "format prometheus" "$T/out"
grep_out bom-prom-power "power_w job 512.4" "$T/out"
printf '\357\273\277tput=100\n' >"$T/bom.log"
check bom-tlog 0 ingest --dry-run --telemetry "$D/smi.csv" --throughput-log "$T/bom.log" \
    --throughput-regex '^tput=(?<throughput>[0-9]+)'
grep_out bom-tlog-rate "work/time 100 " "$T/out"

# --- 6. Wording ----------------------------------------------------------------------------
printf 'timestamp, index, power.draw [W]\n2025/05/14 23:50:00.000, 0\n' >"$T/short.csv"
check one-value 1 ingest --dry-run --telemetry "$T/short.csv"
grep_out one-value-singular "row has 2 fields" "$T/err"
printf '#Entity POWER TOTEC\nID\nGPU 0 250\n' >"$T/one.txt"
check one-value-dcgmi 1 ingest --dry-run --interval 1 --telemetry "$T/one.txt"
grep_out one-value-dcgmi-singular "row has 1 value, header names 2 fields" "$T/err"
printf 'timestamp, index, power.draw [W]\n2025/05/14 23:50:00.000, 0, 200 W\n2025/05/14 23:50:00.000, 1, 200 W\n2025/05/14 23:50:01.000, 0, 201 W\n2025/05/14 23:50:01.000, 1, [GPU is lost]\n' >"$T/lost.csv"
check dry-run-invalid 0 ingest --dry-run --telemetry "$T/lost.csv"
grep_out dry-run-would "would be stored" "$T/out"
no_grep dry-run-not-stored "INVALID for PFI: stored" "$T/out"
check no-power-names-file 1 ingest --dry-run --telemetry "$D/escape.txt" --format dcgmi-dmon
grep_out no-power-file "escape.txt: no power samples\|escape.txt: no telemetry" "$T/err"
printf 'timestamp, index, power.draw [W], temperature.gpu\n2025/05/14 23:50:00.000, 0, 200 W, 40\n2025/05/14 23:50:00.000, 1, [N/A], 41\n' >"$T/nopower.csv"
check job-power-names-file 1 ingest --dry-run --telemetry "$T/nopower.csv"
grep_out job-power-file "nopower.csv: job power unavailable\|nopower.csv: no power samples" "$T/err"

exit $fail
