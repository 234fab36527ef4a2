#!/bin/sh
# pfid restarted under lease_policy = hold (issue 16): after kill -9 mid-lease the restarted
# pfid re-applies the held caps from its journal (never a set back to the original in
# between: the node is not lifted to full power), resumes the lease, and DELETE /v1/caps
# restores the originals; after kill -9 with the journal deleted, the owner lock left by the
# crash raises an ALARM. Fake libnvidia-ml.so.1; every wait a bounded poll.
# Usage: hold_restart.sh PFID FAKE_NVML_LIBRARY
set -u
PFID=$1
FAKE=$2
T=$(mktemp -d /tmp/pfid-hold.XXXXXX)
PID=""
trap '[ -n "$PID" ] && kill -9 $PID 2>/dev/null; rm -rf "$T"' EXIT
export FAKE_NVML_STATE="$T/state" FAKE_NVML_TRACE="$T/trace" PFI_RUN_DIR="$T/run"
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
printf 'gpu 0 uuid=GPU-0 limit=700000 enforced=700000 draw=650000\n' > "$FAKE_NVML_STATE"
printf 'gpu 1 uuid=GPU-1 limit=700000 enforced=700000 draw=640000\n' >> "$FAKE_NVML_STATE"
(umask 077 && printf 'tok\n' > "$T/token")

start() {
    rm -f "$T/port"
    "$PFID" -b nvml -s nvml_library="$FAKE" -l 127.0.0.1:0 -s port_file="$T/port" \
        -t "$T/token" -j "$T/journal" -i 100ms 2>>"$T/pfid.log" &
    PID=$!
    n=0
    until [ -s "$T/port" ] || [ $n -gt 200 ]; do n=$((n + 1)); sleep 0.05; done
    URL="http://127.0.0.1:$(cat "$T/port")"
}
limits() { # limits A B: both GPUs' limits in the state file are A and B mW
    grep -q "^gpu 0 .*limit=$1 " "$FAKE_NVML_STATE" && grep -q "^gpu 1 .*limit=$2 " "$FAKE_NVML_STATE"
}

start
code=$(curl -s -o "$T/body" -w '%{http_code}' -X PUT -H 'Authorization: Bearer tok' \
    -d '{"request_id":"r-1","lease_s":30,"controller":"ctl-a","epoch":3,"caps":[{"uuid":"GPU-0","cap_w":400},{"uuid":"GPU-1","cap_w":450}]}' "$URL/v1/caps")
[ "$code" = 200 ] && limits 400000 450000 && ok "caps 400/450 W in force" || { bad "PUT: $code"; cat "$T/body"; }
[ -s "$T/journal.held" ] && ok "held caps saved beside the journal" || bad "no $T/journal.held"
kill -9 $PID; wait $PID 2>/dev/null
marker=$(wc -l < "$T/trace")
start
tail -n +"$((marker + 1))" "$T/trace" > "$T/trace.after"
grep -q ' 700000 ' "$T/trace.after" && bad "the restart set an original (node lifted): $(cat "$T/trace.after")" ||
    ok "the restart never set an original limit"
limits 400000 450000 && ok "held caps in force after the restart" || { bad "limits after restart"; cat "$FAKE_NVML_STATE"; }
grep -q "restarted under lease_policy=hold: the held caps of lease r-1 re-applied" "$T/pfid.log" &&
    ok "pfid says it re-applied the held caps" || { bad "no re-apply line"; tail -5 "$T/pfid.log"; }
curl -sf "$URL/v1/state" | python3 -c 'import json,sys
s=json.load(sys.stdin); g=s["gpus"]; l=s["lease"]
sys.exit(0 if l["request_id"]=="r-1" and all(x["original_cap_w"]==700 for x in g) else 1)' &&
    ok "lease r-1 resumed, originals 700 W" || bad "state after restart"
code=$(curl -s -o "$T/body" -w '%{http_code}' -X PUT -H 'Authorization: Bearer tok' \
    -d '{"request_id":"r-2","lease_s":30,"controller":"ctl-b","epoch":9,"caps":[{"uuid":"GPU-0","cap_w":600}]}' "$URL/v1/caps")
[ "$code" = 409 ] && grep -q "lease held by controller ctl-a epoch 3" "$T/body" &&
    ok "fencing survives the restart: another controller gets 409" || { bad "fencing: $code"; cat "$T/body"; }
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H 'Authorization: Bearer tok' "$URL/v1/caps")
[ "$code" = 200 ] && limits 700000 700000 && [ ! -e "$T/journal" ] && [ ! -e "$T/journal.held" ] &&
    ok "DELETE: originals back, journal and held caps gone" || { bad "DELETE: $code"; ls "$T"; }

# a held-caps file whose revert time is no time of a lease (1e300: caps held for ever): not
# resumed, said with the file, the originals restored (was: caps re-applied "until 1e300 s")
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Authorization: Bearer tok' \
    -d '{"request_id":"r-4","lease_s":30,"caps":[{"uuid":"GPU-0","cap_w":400}]}' "$URL/v1/caps")
kill -9 $PID; wait $PID 2>/dev/null
sed -i 's/^revert_wall .*/revert_wall 1e300/' "$T/journal.held"
start
n=0
until limits 700000 700000 || [ $n -gt 100 ]; do n=$((n + 1)); sleep 0.05; done
grep -q "journal.held: expires_wall .* / revert_wall .* is not a valid time" "$T/pfid.log" &&
    ok "a held revert time of 1e300 s refused, naming the file" || { bad "no refusal"; tail -5 "$T/pfid.log"; }
limits 700000 700000 && ! grep -q "held caps of lease r-4 re-applied" "$T/pfid.log" &&
    ok "the originals restored, not the held caps" || { bad "limits after a bad held file"; cat "$FAKE_NVML_STATE"; }
curl -s -o /dev/null -X DELETE -H 'Authorization: Bearer tok' "$URL/v1/caps"

# kill -9 with the journal deleted: the crash's owner lock is an alarm
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Authorization: Bearer tok' \
    -d '{"request_id":"r-3","lease_s":30,"caps":[{"uuid":"GPU-0","cap_w":400}]}' "$URL/v1/caps")
kill -9 $PID; wait $PID 2>/dev/null
rm -f "$T/journal" "$T/journal.held"
start
grep -q "ALARM: GPU GPU-0 was owned by 'pfid pid" "$T/pfid.log" &&
    ok "journal deleted after a crash: ALARM naming the GPU and the crashed owner" || { bad "no alarm"; tail -5 "$T/pfid.log"; }
kill $PID; wait $PID; PID=""
exit $fail
