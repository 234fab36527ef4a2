#!/bin/sh
# No SQLite side file (-wal, -shm, -journal) is left beside a database once the pfi command
# that used it has exited: pfi demo cluster (its audit logs, and pfi report on them), pfi
# control --db --store (the controller's audit log, and the run store it only reads), pfi
# control status, pfi report, pfi sweep --db, pfi analyze --db, pfi runs. A read-only
# connection to a database left in WAL mode creates both files and cannot remove them, so
# the writers must leave their file in rollback-journal mode when they close it.
# usage: sqlite_files.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=$2
SRC=$3
WORK=$(mktemp -d)
. "$SRC/scripts/cluster-lib.sh"
trap 'cluster_cleanup; rm -rf "$WORK"' EXIT INT TERM
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
expect() { # expect NAME WANT GOT LOG
    if [ "$3" -eq "$2" ]; then ok "$1 (exit $3)"; else bad "$1: exit $3, want $2"; tail -20 "$4"; fi
}
# no_side_files NAME DIR — DIR holds no SQLite -wal, -shm or -journal file
no_side_files() {
    left=$(ls -A "$2" | grep -E -- '-(wal|shm|journal)$' | tr '\n' ' ')
    if [ -z "$left" ]; then ok "$1: no -wal/-shm left"; else bad "$1: left $left"; fi
}

# 1. pfi demo cluster: two controller runs, their audit logs, pfi report on both
# (under a user's usual umask 022: the demo itself makes its agents file the user's alone)
# (its agents through pfid_mode_wrap.sh: the agents file's mode seen as each agent starts)
: >"$WORK/modes"
(umask 022 && REAL_PFID=$PFI_AGENT_BIN PFI_MODES_LOG=$WORK/modes \
    PFI_AGENT_BIN=$SRC/tests/control/pfid_mode_wrap.sh "$PFI" demo cluster --agents 2 \
    --out "$WORK/demo" >"$WORK/demo.log" 2>&1)
expect "pfi demo cluster" 0 $? "$WORK/demo.log"
# the agents file holds the tokens: mode 0600 from its creation, under the umask 022
if [ "$(wc -l <"$WORK/modes")" -eq 2 ] && ! grep -qv '^600 ' "$WORK/modes"; then
    ok "demo cluster: its agents file is mode 600 ($(wc -l <"$WORK/modes") looks)"
else bad "demo cluster: agents file modes: $(cat "$WORK/modes")"; fi
if grep -n 'warning' "$WORK/demo.log"; then bad "pfi demo cluster warns about itself"; else
    ok "pfi demo cluster: no warning"; fi
[ -s "$WORK/demo/cluster.png" ] && [ -s "$WORK/demo/equal.db" ] && ok "demo wrote its figure and logs" \
    || bad "demo outputs: $(ls -A "$WORK/demo")"
no_side_files "pfi demo cluster" "$WORK/demo"
"$PFI" control status --db "$WORK/demo/equal.db" >"$WORK/status.log" 2>&1
expect "pfi control status" 0 $? "$WORK/status.log"
no_side_files "pfi control status" "$WORK/demo"
"$PFI" report "$WORK/demo/pfi-model.db" "$WORK/demo/equal.db" -o "$WORK/demo/again.svg" \
    >"$WORK/report.log" 2>&1
expect "pfi report" 0 $? "$WORK/report.log"
no_side_files "pfi report" "$WORK/demo"
# the demo's per-period lines (no budget outside the event), status and report summary show a
# missing value as "-" or a word, never nan/inf
if grep -P -n '(?i)(?<![A-Za-z0-9_-])[-+]?(nan|inf|infinity)(?![A-Za-z0-9_-])' \
    "$WORK/demo.log" "$WORK/status.log" "$WORK/report.log" >"$WORK/nan" 2>&1; then
    bad "demo / status / report print nan or inf: $(head -n 3 "$WORK/nan")"
else
    ok "demo, status and report print no nan or inf"
fi

# 2. a run store from a sweep, read by the controller (--store) while it writes its audit log
mkdir -p "$WORK/st"
"$PFI" sweep --caps 700,500,300 --db "$WORK/st/store.db" --group dense-pt1 --duration 2m \
    --warmup 1m --emulate gpus=4,alpha=0.93 >"$WORK/sweep.log" 2>&1
expect "pfi sweep --db" 0 $? "$WORK/sweep.log"
no_side_files "pfi sweep --db" "$WORK/st"
: >"$WORK/agents"
start_agent node1 tok1 "dense-pt1:dense:4:0.93:24000" || exit 1
"$PFI" control --agents "$WORK/agents" --reduction 30% --start 0.5 --duration 1 --period 0.25 \
    --run-for 2 --db "$WORK/st/audit.db" --store "$WORK/st/store.db" --quiet \
    >"$WORK/control.log" 2>&1
expect "pfi control --db --store" 0 $? "$WORK/control.log"
cluster_cleanup
no_side_files "pfi control --db --store" "$WORK/st"
"$PFI" analyze --db "$WORK/st/store.db" >"$WORK/analyze.log" 2>&1
expect "pfi analyze --db" 0 $? "$WORK/analyze.log"
"$PFI" runs --db "$WORK/st/store.db" >"$WORK/runs.log" 2>&1
expect "pfi runs --db" 0 $? "$WORK/runs.log"
no_side_files "pfi analyze --db, pfi runs" "$WORK/st"

exit $fail
