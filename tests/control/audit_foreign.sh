#!/bin/sh
# pfi control --db appends only to what can hold its audit log: a foreign file given as the
# audit path — a CSV, another program's SQLite database (one with a table named ctl_runs
# too: an audit table whose columns are not pfi's) — is refused (exit 1, the message
# names the file and says it is not a pfi control audit log) and left byte for byte as it
# was (no table added, no journal mode switched, no -wal/-shm/-journal left beside it). A new
# file, an empty one, an audit log (its earlier run kept; one an earlier pfi wrote, without
# the columns added since — ctl_jobs.band the latest —, gets them) and a pfi run store (its
# runs kept, the ctl_* tables beside them) are taken; a ctl_jobs with a column after pfi's
# that pfi does not write is refused. The one agent is a URL nobody answers: each
# controller run records its periods all the same (exit 6, ran degraded).
# usage: audit_foreign.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
SRC=$3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pfi-audit-foreign.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 2' HUP INT TERM
fail=0
check() { if [ "$1" -ne 0 ]; then echo "FAIL: $2"; fail=1; else echo "ok: $2"; fi; }
# a loopback port just free (bound, then closed): nobody answers there
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(umask 077 && printf 'http://127.0.0.1:%s tok-nobody-0123456789\n' "$port" > "$WORK/agents")
# ctl DB — one controller run of 2 periods on DB; its exit status
ctl() {
    timeout 60 "$PFI" control --agents "$WORK/agents" --budget-w 1000 --period 0.5 \
        --run-for 0.8 --db "$1" > "$WORK/out" 2> "$WORK/err"
}
# tables DB — the names of DB's tables, sorted, on one line
tables() {
    python3 -c 'import sqlite3, sys
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
print(" ".join(sorted(r[0] for r in c.execute("select name from sqlite_master where type = '"'"'table'"'"'"))))' "$1"
}
no_side_files() { ! ls -A "$WORK" | grep -qE -- '-(wal|shm|journal)$'; }

# ---- refused: a CSV, another program's SQLite database ----------------------------------------
printf 'job,class,gpus\ndense-a,dense,8\n' > "$WORK/jobs.csv"
python3 - "$WORK/notes.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("create table notes(id integer primary key, text text)")
c.execute("insert into notes(text) values ('keep me')")
c.commit()
PY
# another program's database that happens to hold a table named ctl_runs: no audit log
python3 - "$WORK/ctlruns.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("create table ctl_runs(x)")
c.execute("insert into ctl_runs values ('keep me')")
c.commit()
PY
for f in jobs.csv notes.db ctlruns.db; do
    cp "$WORK/$f" "$WORK/$f.orig"
    ctl "$WORK/$f"
    rc=$?
    [ $rc -eq 1 ]
    check $? "$f as --db: refused, exit $rc (want 1)"
    grep -q "audit log: $WORK/$f: not a pfi control audit log" "$WORK/err"
    check $? "$f: the message names it: $(head -c 300 "$WORK/err")"
    cmp -s "$WORK/$f" "$WORK/$f.orig"
    check $? "$f: left byte for byte as it was"
    no_side_files
    check $? "$f: no SQLite side file left beside it"
done
# --check reads the --db as a start would: each foreign file is not valid (exit 2, named),
# left as it was
for f in jobs.csv notes.db ctlruns.db; do
    timeout 60 "$PFI" control --agents "$WORK/agents" --budget-w 1000 --period 0.5 \
        --db "$WORK/$f" --check > "$WORK/out" 2> "$WORK/err"
    rc=$?
    [ $rc -eq 2 ] && grep -q "$WORK/$f: not a pfi control audit log" "$WORK/err" &&
        ! grep -q "configuration valid" "$WORK/out"
    check $? "--check with $f as --db: not valid, exit $rc (want 2), named: $(head -c 300 "$WORK/err")"
    cmp -s "$WORK/$f" "$WORK/$f.orig" && no_side_files
    check $? "--check: $f left byte for byte as it was"
done
[ "$(tables "$WORK/notes.db")" = notes ]
check $? "notes.db: its one table, no ctl_* added ($(tables "$WORK/notes.db"))"
[ "$(tables "$WORK/ctlruns.db")" = ctl_runs ]
check $? "ctlruns.db: its one table, no ctl_* added ($(tables "$WORK/ctlruns.db"))"

# ---- taken: a new file, an empty one, an audit log, a run store ----------------------------
ctl "$WORK/new.db"
rc=$?
[ $rc -eq 6 ] && tables "$WORK/new.db" | grep -q ctl_runs
check $? "a new file: becomes an audit log (exit $rc: ran degraded)"
ctl "$WORK/new.db"
[ $? -eq 6 ] && [ "$(python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("select count(*) from ctl_runs").fetchone()[0],
      c.execute("select count(distinct run) from ctl_periods").fetchone()[0])' "$WORK/new.db")" = "2 2" ]
check $? "an audit log: the second run appended, the first kept"
: > "$WORK/empty.db"
ctl "$WORK/empty.db"
[ $? -eq 6 ] && tables "$WORK/empty.db" | grep -q ctl_runs
check $? "an empty file: becomes an audit log"
# a log an earlier pfi wrote: ctl_periods before faults, bound, ramp_limited, lead; ctl_jobs
# before cap_state (the columns added since at the end): taken, the columns added
python3 - "$WORK/old.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript("""
CREATE TABLE ctl_runs(id INTEGER PRIMARY KEY, started_wall REAL, config TEXT);
CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL, wall_s REAL,
 event INTEGER, budget_w REAL, alloc_budget_w REAL, measured_w REAL, reserved_w REAL,
 predicted_w REAL, correction_w REAL, ref_w REAL, tput_tok_s REAL, cap_sum_w REAL,
 strategy TEXT, agents_up INTEGER, agents INTEGER, jobs INTEGER, gpus INTEGER,
 decreases INTEGER, increases INTEGER, unconfirmed INTEGER, telemetry TEXT,
 restored INTEGER, note TEXT);
CREATE TABLE ctl_jobs(period INTEGER, job TEXT, class TEXT, gpus INTEGER, pfi REAL,
 source TEXT, cap_w REAL, ref_power_w REAL, ref_tput REAL, power_w REAL,
 pred_power_w REAL, tput REAL);
INSERT INTO ctl_runs(started_wall, config) VALUES (1, '{}');
""")
c.commit()
PY
ctl "$WORK/old.db"
rc=$?
[ $rc -eq 6 ] && [ "$(python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("select count(*) from ctl_runs").fetchone()[0],
      c.execute("select count(*) from pragma_table_info(\"ctl_periods\") where name = \"lead\"").fetchone()[0])' "$WORK/old.db")" = "2 1" ]
check $? "an audit log an earlier pfi wrote: taken, its run kept, the new columns added (exit $rc)"
[ "$(python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print([r[0] for r in c.execute("select name from pragma_table_info(\"ctl_jobs\") order by cid")][-2:])' "$WORK/old.db")" = "['cap_state', 'band']" ]
check $? "the earlier log's ctl_jobs: cap_state, then band added at its end"
# a log the pfi before ctl_jobs.band wrote (every column but band): taken, band added
python3 - "$WORK/old.db" "$WORK/noband.db" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1])
dst = sqlite3.connect(sys.argv[2])
for (sql,) in src.execute("select sql from sqlite_master where type = 'table'"):
    dst.execute(sql.replace(", band REAL", ""))
dst.execute("insert into ctl_runs(started_wall, config) values (1, '{}')")
dst.commit()
assert [r[1] for r in dst.execute("pragma table_info(ctl_jobs)")][-1] == "cap_state"
PY
ctl "$WORK/noband.db"
rc=$?
[ $rc -eq 6 ] && [ "$(python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("select count(*) from ctl_runs").fetchone()[0],
      [r[1] for r in c.execute("pragma table_info(ctl_jobs)")][-1])' "$WORK/noband.db")" = "2 band" ]
check $? "a log from before ctl_jobs.band: taken, its run kept, band added (exit $rc)"
# one whose ctl_jobs has a column after cap_state that pfi does not write: no pfi log
python3 - "$WORK/noband.db" "$WORK/otherband.db" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1])
dst = sqlite3.connect(sys.argv[2])
for (sql,) in src.execute("select sql from sqlite_master where type = 'table'"):
    dst.execute(sql.replace("cap_state TEXT", "cap_state TEXT, priority TEXT"))
dst.commit()
PY
cp "$WORK/otherband.db" "$WORK/otherband.db.orig"
ctl "$WORK/otherband.db"
rc=$?
[ $rc -eq 1 ] && grep -q "audit log: $WORK/otherband.db: not a pfi control audit log (table ctl_jobs: column 14 is \"priority\", pfi writes band)" "$WORK/err" &&
    cmp -s "$WORK/otherband.db" "$WORK/otherband.db.orig"
check $? "ctl_jobs with another 14th column: refused, exit $rc (want 1), left as it was: $(head -c 300 "$WORK/err")"
"$PFI" ingest --db "$WORK/store.db" --group g --cap 300 --telemetry "$SRC/examples/smi.csv" \
    > /dev/null 2>&1
check $? "a run store ingested"
runs=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from runs").fetchone()[0])' "$WORK/store.db")
ctl "$WORK/store.db"
[ $? -eq 6 ] && tables "$WORK/store.db" | grep -q 'ctl_runs' &&
    [ "$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from runs").fetchone()[0])' "$WORK/store.db")" = "$runs" ]
check $? "a run store: the audit tables beside its $runs run(s), kept"
no_side_files
check $? "no SQLite side file left"

# ---- not written: a device (/dev/full), a file that cannot grow (a full disk) --------------
if [ -w /dev/full ] && [ ! -e /dev/full-journal ]; then
    ctl /dev/full
    rc=$?
    [ $rc -eq 3 ] && grep -q -- "/dev/full" "$WORK/err"
    check $? "/dev/full as --db: the audit log not written, exit $rc (want 3), named: $(head -c 300 "$WORK/err")"
    [ ! -e /dev/full-journal ]
    check $? "/dev/full: no journal made beside it"
else
    echo "ok: /dev/full missing (or a journal beside it): cannot test a device as --db"
fi
# no byte may be written to any file (RLIMIT_FSIZE 0, SIGXFSZ ignored: write fails, EFBIG)
# (its messages through a pipe, which the limit does not stop)
(ulimit -f 0 && trap '' XFSZ && timeout 60 "$PFI" control --agents "$WORK/agents" \
    --budget-w 1000 --period 0.5 --run-for 0.8 --db "$WORK/nospace.db" 2>&1; echo "exit=$?") |
    cat > "$WORK/err"
rc=$(sed -n 's/^exit=//p' "$WORK/err")
[ "$rc" = 3 ] && grep -q "audit log: $WORK/nospace.db: " "$WORK/err"
check $? "a file that cannot grow as --db: exit $rc (want 3), named: $(head -c 300 "$WORK/err")"
exit $fail
