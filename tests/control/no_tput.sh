#!/bin/sh
# Missing throughput is missing, never 0 (issue 16 item 10): a pfid on the fake NVML library
# whose jobs report no tokens/s; pfi control's period lines show "-" in the tokens/s column,
# and its audit log stores NULL (no 0) for the cluster's and each job's tokens/s.
# usage: no_tput.sh PFI PFID FAKE_NVML_LIBRARY
set -u
PFI=$1
PFID=$2
FAKE=$3
T=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$T"' EXIT INT TERM
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
export FAKE_NVML_STATE="$T/state"
printf 'gpu 0 uuid=GPU-0 limit=700000 enforced=700000 draw=650000\n' >"$FAKE_NVML_STATE"
printf 'gpu 1 uuid=GPU-1 limit=700000 enforced=700000 draw=640000\n' >>"$FAKE_NVML_STATE"
printf '# uuid job class\nGPU-0 job-a dense\nGPU-1 job-b dense\n' >"$T/map"
(umask 077 && printf 'tok-no-tput-0123456789\n' >"$T/token")
"$PFID" -l 127.0.0.1:0 -s port_file="$T/port" -t "$T/token" -j "$T/journal" -i 100ms \
    -b nvml -s nvml_library="$FAKE" -s jobs=static -s jobs_file="$T/map" 2>"$T/pfid.log" &
PID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 200 ] && kill -0 "$PID" 2>/dev/null; do
    sleep 0.05
    i=$((i + 1))
done
[ -s "$T/port" ] || { echo "FAIL pfid did not start"; cat "$T/pfid.log"; exit 1; }
(umask 077 && echo "http://127.0.0.1:$(cat "$T/port") tok-no-tput-0123456789" >"$T/agents")
chmod 600 "$T/agents"
"$PFI" control --agents "$T/agents" --reduction 30% --start 0.3 --duration 1 --period 0.25 \
    --run-for 1.5 --db "$T/audit.db" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 0 ] && ok "control ran (exit 0)" || { bad "control exit $rc"; cat "$T/err"; }
# the period lines: time, event, budget, measured, reserved, predicted, tokens/s, agents
lines=$(awk '$2 == "yes" || $2 == "no"' "$T/out" | wc -l)
zero=$(awk '($2 == "yes" || $2 == "no") && $7 == "0"' "$T/out" | wc -l)
dash=$(awk '($2 == "yes" || $2 == "no") && $7 == "-"' "$T/out" | wc -l)
if [ "$lines" -gt 0 ] && [ "$zero" -eq 0 ] && [ "$dash" -eq "$lines" ]; then
    ok "period lines: tokens/s '-' in all $lines"
else
    bad "period lines: $lines lines, $dash '-', $zero '0'"; cat "$T/out"
fi
python3 - "$T/audit.db" <<'PY' || fail=1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n, nulls, zeros = db.execute(
    "SELECT count(*), sum(tput_tok_s IS NULL), sum(tput_tok_s = 0) FROM ctl_periods").fetchone()
cols = [r[1] for r in db.execute("PRAGMA table_info(ctl_jobs)")]
jn = jz = 0
if "tput" in cols:
    jn, jz = db.execute("SELECT count(*), coalesce(sum(tput = 0), 0) FROM ctl_jobs").fetchone()
if n > 0 and nulls == n and not zeros and jz == 0:
    print(f"ok   audit: tput_tok_s NULL in all {n} periods, no 0 in {jn} job rows")
else:
    print(f"FAIL audit: {n} periods, {nulls} NULL, {zeros} zero; job rows {jn}, {jz} zero")
    sys.exit(1)
PY
kill "$PID" 2>/dev/null
wait "$PID" 2>/dev/null
PID=""
exit $fail
