#!/bin/sh
# pfi openadr poll against a stub VTN on loopback (stub_vtn.py): events to the schedule,
# reports with the right intervals, an event changed and one cancelled (deleted), a refused
# secret (loud, exit 6), a credentials file readable by others (exit 1), the VTN down (the
# last schedule kept, exit 5), and the polling loop following a change. Every wait is a
# bounded poll for a condition.
# Usage: vtn.sh PFI
set -eu
PFI=$1
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
STUB=
cleanup() {
    [ -n "$STUB" ] && kill "$STUB" 2>/dev/null || true
    [ -n "${LOOP:-}" ] && kill "$LOOP" 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

E=$(python3 -c 'import time; print(int(time.time()) - 1000)')
# events.json: times relative to the epoch E (now is E + 1000 and a little)
write_events() { # $1: which variant (base, changed, cancelled)
    python3 - "$T/vtn/events.json" "$E" "$1" <<'PY'
import json, sys, datetime
path, E, variant = sys.argv[1], int(sys.argv[2]), sys.argv[3]
iso = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
ev1 = {"id": "ev-1", "programID": "prog-7", "objectType": "EVENT",
       "modificationDateTime": iso(E), "priority": 1,
       "payloadDescriptors": [{"objectType": "EVENT_PAYLOAD_DESCRIPTOR",
                               "payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW"}],
       "intervalPeriod": {"start": iso(E + 100), "duration": "PT5M"},
       "intervals": [{"id": i, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [v]}]}
                     for i, v in enumerate([5, 4.5, 4.2, 4, 4])]}
level = 1 if variant == "changed" else 2
ev2 = {"id": "ev-2", "programID": "prog-7", "modificationDateTime": iso(E + (5 if variant == "changed" else 0)),
       "intervalPeriod": {"start": iso(E + 2000), "duration": "PT10M"},
       "intervals": [{"id": 0, "payloads": [{"type": "SIMPLE", "values": [level]}]},
                     {"id": 1, "intervalPeriod": {"start": iso(E + 3000), "duration": "PT1M"},
                      "payloads": [{"type": "CHARGE_STATE_SETPOINT", "values": [50]}]}]}
ev3 = {"id": "ev-3", "programID": "prog-8",
       "intervalPeriod": {"start": iso(E + 100), "duration": "PT1H"},
       "intervals": [{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [1]}]}]}
evs = [ev2, ev3] if variant == "cancelled" else [ev1, ev2, ev3]
# program "big": 60 events (more than one page of 50), one 60-s interval each, 100 s apart
evs += [{"id": "big-%d" % k, "programID": "prog-9",
         "intervalPeriod": {"start": iso(E + 5000 + 100 * k), "duration": "PT1M"},
         "intervals": [{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT",
                                              "values": [3 + k / 100]}]}]} for k in range(60)]
json.dump(evs, open(path + ".tmp", "w"))
import os; os.rename(path + ".tmp", path)
PY
}
start_stub() {
    rm -f "$T/vtn/port"
    python3 "$HERE/stub_vtn.py" "$T/vtn" ven-1 s3cret &
    STUB=$!
    i=0
    while [ ! -s "$T/vtn/port" ]; do
        i=$((i + 1)); [ $i -le 200 ] || fail "stub VTN did not start"; sleep 0.05
    done
    URL=http://127.0.0.1:$(cat "$T/vtn/port")
}
mkdir -p "$T/vtn"
write_events base
start_stub
umask 077
printf 'client_id=ven-1\nclient_secret=s3cret\n' >"$T/creds"
printf 'client_id=ven-1\nclient_secret=wrong\n' >"$T/bad"
printf '# SIMPLE level -> target\n1 10%%\n2 25%%\n3 6000W\n' >"$T/levels"
# measured power: 6 kW, 5 kW, 4.2 kW over ev-1's first three intervals (10 s samples)
python3 -c "
E=$E
for t in range(E + 100, E + 1000, 10):
    print('%d,%g' % (t, 6000 if t < E + 400 else 5000 if t < E + 700 else 4200))" >"$T/measured.csv"
POLL="$PFI openadr poll --vtn $URL --program dc-flex --credentials $T/creds --epoch $E
      --schedule-out $T/sched.json --levels $T/levels --measured $T/measured.csv --once"

# ---- events -> schedule, reports ----
$POLL 2>"$T/err1" || fail "poll: exit $? ($(cat "$T/err1"))"
python3 - "$T/sched.json" <<'PY' || fail "schedule: $(cat "$T/sched.json")"
import json, sys
ev = json.load(open(sys.argv[1]))["events"]
want = [(1000, 1600, {"budget_w": 4000}), (2000, 2600, {"reduction_pct": 25})]
assert len(ev) == 2, ev
for e, (s, t, tgt) in zip(ev, want):
    assert abs(e["start_s"] - s) < 1e-6 and abs(e["end_s"] - t) < 1e-6, e
    k, v = list(tgt.items())[0]
    assert abs(e[k] - v) < 1e-6 and e["ramp_s"] == 0, e
PY
grep -q 'CHARGE_STATE_SETPOINT ignored' "$T/err1" || fail "no note for CHARGE_STATE_SETPOINT"
$PFI schedule "$T/sched.json" >/dev/null || fail "pfi schedule cannot read the written schedule"
python3 - "$T/vtn/reports.jsonl" <<'PY' || fail "reports: $(cat "$T/vtn/reports.jsonl")"
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
assert len(rs) == 1, rs
r = rs[0]
assert r["eventID"] == "ev-1" and r["programID"] == "prog-7" and r["clientName"] == "ven-1", r
ivs = r["resources"][0]["intervals"]
assert [i["id"] for i in ivs] == [0, 1, 2], ivs
assert [i["payloads"][0]["values"][0] for i in ivs] == [6.0, 5.0, 4.2], ivs
assert all(i["intervalPeriod"]["duration"] == "PT300S" for i in ivs), ivs
assert r["payloadDescriptors"][0]["payloadType"] == "DEMAND"
assert r["payloadDescriptors"][0]["units"] == "KW"
PY
# a second poll reports nothing again; the token is fetched once per process
$POLL 2>"$T/err2" || fail "second poll: exit $?"
[ "$(wc -l <"$T/vtn/reports.jsonl")" -eq 1 ] || fail "intervals reported twice"
[ "$(grep -c 'POST /auth/token 200' "$T/vtn/requests.log")" -eq 2 ] || fail "token not reused"

# ---- a revoked token (401) is fetched again, once per refusal, and the poll succeeds ----
: >"$T/vtn/requests.log"
echo 1 >"$T/vtn/rotate_after"
rm -f "$T/sched.json.reported"
$POLL 2>"$T/err2b" || fail "poll with revoked tokens: exit $? ($(cat "$T/err2b"))"
rm "$T/vtn/rotate_after"
[ "$(grep -c ' 401$' "$T/vtn/requests.log")" -eq 2 ] || fail "no 401 seen: $(cat "$T/vtn/requests.log")"
[ "$(grep -c 'POST /auth/token 200' "$T/vtn/requests.log")" -eq 3 ] || fail "token not refetched on 401"
[ "$(wc -l <"$T/vtn/reports.jsonl")" -eq 2 ] || fail "report not posted after a 401"
# ---- a token about to expire (expires_in 5 s < the 10 s margin) is fetched before each use ----
: >"$T/vtn/requests.log"
echo 5 >"$T/vtn/expires_in"
$POLL 2>"$T/err2c" || fail "poll with short tokens: exit $?"
rm "$T/vtn/expires_in"
[ "$(grep -c 'POST /auth/token 200' "$T/vtn/requests.log")" -eq 2 ] || fail "expiry ignored: $(cat "$T/vtn/requests.log")"
grep -q ' 401$' "$T/vtn/requests.log" && fail "an expired token was used"

# ---- measured power from the controller's audit log (ctl_periods: wall_s, measured_w) ----
# The controller reads the power at a period's tick, before it sets that period's caps: a
# row's reading is of the 10 s before it. So the reading stamped at an interval's start (E +
# 400: 6.1 kW) is of the interval before, and the one stamped at its end (E + 700: 5.1 kW) of
# its last seconds; the rows before the event read 9 kW (the one stamped E + 100, of [E + 90,
# E + 100), in no interval). Each interval's mean is then 6.1, 5.1 and 4.3 kW exactly; pairing
# each reading with the interval it is stamped in gave 6.2, 5.13 and 4.33.
python3 - "$T/audit.db" "$E" <<'PY'
import sqlite3, sys
db, E = sqlite3.connect(sys.argv[1]), int(sys.argv[2])
db.execute("CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL, wall_s REAL,"
           " event INTEGER, budget_w REAL, alloc_budget_w REAL, measured_w REAL, reserved_w REAL,"
           " predicted_w REAL, correction_w REAL, tput_tok_s REAL, cap_sum_w REAL, strategy TEXT,"
           " note TEXT, agents_up INTEGER, agents INTEGER)")
# a reading stamped t measured [t - 10, t) (5 s after a missing one's stamp)
rows = {t: 9000 if t <= E + 100 else 6100 if t <= E + 400 else 5100 if t <= E + 700 else 4300
        for t in range(E + 80, E + 1001, 10)}
# missing readings between them: NULL, and a stale 0 W of a log written before it was NULL;
# neither is power drawn (the first interval's mean stays 6.1 kW, not less)
rows.update({E + 105: None, E + 115: 0.0})
for t in sorted(rows):
    db.execute("INSERT INTO ctl_periods(run, t_s, wall_s, event, measured_w) VALUES (1, ?, ?, 1, ?)",
               (t - E, t, rows[t]))
db.commit()
PY
$PFI openadr poll --vtn "$URL" --program dc-flex --credentials "$T/creds" --epoch "$E" \
    --schedule-out "$T/sched.json" --levels "$T/levels" --audit "$T/audit.db" \
    --state "$T/audit.reported" --client-name site-a --once 2>"$T/err2e" || fail "audit: exit $?"
python3 - "$T/vtn/reports.jsonl" <<'PY' || fail "audit report: $(tail -1 "$T/vtn/reports.jsonl")"
import json, sys
r = json.loads(open(sys.argv[1]).readlines()[-1])
assert r["clientName"] == "site-a" and r["eventID"] == "ev-1", r
ivs = r["resources"][0]["intervals"]
assert [round(i["payloads"][0]["values"][0], 9) for i in ivs] == [6.1, 5.1, 4.3], ivs
PY

# ---- more than one page of events (limit 50) ----
$PFI openadr poll --vtn "$URL" --program big --credentials "$T/creds" --epoch "$E" \
    --schedule-out "$T/big.json" --once 2>"$T/err2d" || fail "big: exit $?"
python3 -c "
import json; ev = json.load(open('$T/big.json'))['events']
assert len(ev) == 60 and ev[59]['start_s'] == 5000 + 5900 and abs(ev[59]['budget_w'] - 3590) < 1e-6, ev" ||
    fail "paging: $(cat "$T/big.json")"
grep -q 'skip=50&limit=50' "$T/vtn/requests.log" || fail "second page not asked"

# ---- an event changed: ev-2 now asks level 1 (10 %) ----
write_events changed
$POLL 2>"$T/err3" || fail "poll after change: exit $?"
grep -q '"reduction_pct": 10' "$T/sched.json" || fail "change not followed: $(cat "$T/sched.json")"

# ---- an event cancelled (deleted from the VTN): ev-1 leaves the timeline ----
write_events cancelled
$POLL 2>"$T/err4" || fail "poll after cancellation: exit $?"
python3 -c "
import json; ev = json.load(open('$T/sched.json'))['events']
assert len(ev) == 1 and ev[0]['start_s'] == 2000, ev" || fail "cancellation: $(cat "$T/sched.json")"

# ---- auth failure: the token URL refuses a wrong secret: loud, exit 6, schedule kept ----
cp "$T/sched.json" "$T/kept.json"
set +e
$PFI openadr poll --vtn "$URL" --program dc-flex --credentials "$T/bad" --epoch "$E" \
    --schedule-out "$T/sched.json" --once 2>"$T/err5"
rc=$?
set -e
[ $rc -eq 6 ] || fail "bad secret: exit $rc, want 6 ($(cat "$T/err5"))"
grep -q 'AUTHENTICATION FAILED' "$T/err5" || fail "bad secret not loud: $(cat "$T/err5")"
cmp -s "$T/sched.json" "$T/kept.json" || fail "bad secret changed the schedule"

# ---- a credentials file readable by others is refused ----
chmod 644 "$T/bad"
set +e
$PFI openadr poll --vtn "$URL" --program dc-flex --credentials "$T/bad" --epoch "$E" \
    --schedule-out "$T/sched.json" --once 2>"$T/err6"
rc=$?
set -e
[ $rc -eq 1 ] && grep -q 'mode 0600' "$T/err6" || fail "open credentials: exit $rc"

# ---- the VTN down: exit 5, said, the last schedule kept ----
kill "$STUB"; wait "$STUB" 2>/dev/null || true; STUB=
set +e
$POLL --timeout 2 2>"$T/err7"
rc=$?
set -e
[ $rc -eq 5 ] || fail "VTN down: exit $rc, want 5 ($(cat "$T/err7"))"
grep -q 'VTN unreachable.*keeping the last schedule' "$T/err7" || fail "VTN down not said"
cmp -s "$T/sched.json" "$T/kept.json" || fail "VTN down changed the schedule"

# ---- the loop: a change on the VTN reaches the schedule file ----
write_events base
start_stub
$PFI openadr poll --vtn "$URL" --program dc-flex --credentials "$T/creds" --epoch "$E" \
    --schedule-out "$T/loop.json" --levels "$T/levels" --interval 0.2 2>"$T/err8" &
LOOP=$!
i=0
until grep -q '"reduction_pct": 25' "$T/loop.json" 2>/dev/null; do
    i=$((i + 1)); [ $i -le 200 ] || fail "loop: no first schedule"; sleep 0.05
done
write_events changed
i=0
until grep -q '"reduction_pct": 10' "$T/loop.json" 2>/dev/null; do
    i=$((i + 1)); [ $i -le 200 ] || fail "loop: change not followed"; sleep 0.05
done
kill -TERM "$LOOP"
set +e
wait "$LOOP"
rc=$?
set -e
LOOP=
[ $rc -eq 0 ] || fail "loop: exit $rc after SIGTERM"
[ -n "${OADR_SHOW:-}" ] && cat "$T"/err* >&2
echo "openadr vtn: ok"
