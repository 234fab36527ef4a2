#!/bin/sh
# End-to-end: a job's priority band from the API (PUT /v1/jobs/ID) and from its Slurm QOS
# (--slurm --qos-band), not only from --policy (issue 18 item 4). One emulated pfid agent,
# three alike jobs of 2 GPUs (201, 202, 203: dense, alpha 0.93), a 2 600 W budget: the lowest
# band is cut to its lowest cap, the highest keeps its top cap, the middle one takes the cut
# in between (the rule tests/control/bands.sh checks with --policy bands alone).
#  1. API: --policy gives 201 band 2, 202 band 1, 203 band 0; during the event a
#     PUT /v1/jobs/203 {"band": 3} makes 203 the highest: from then 202 is at its lowest cap,
#     201 in between, 203 at its top. GET /v1/status lists the API's bands; bad bodies are
#     refused (400 not a number / unknown key, 422 out of range, 401 without the token).
#  2. Slurm QOS: a stand-in squeue gives 201 QOS scavenger, 202 normal, 203 premium;
#     --qos-band premium=2,normal=1,scavenger=0 turns the order of (1) around: 201 at its
#     lowest cap, 203 at its top; with a --policy line "202 band=5" 202's own band wins over
#     its QOS (202 at top, 203 in between, 201 lowest). Malformed --qos-band (a QOS name
#     with a blank too): exit 2. --qos-band alone turns --slurm on; --check says so.
#  3. The audit log keeps each job's band every period, whichever source gave it
#     (ctl_jobs.band; the API's were held in memory alone): 203 in band 0, then 3 from the
#     PUT on; the QOS's bands; pfi control status (text and --json) shows the last period's.
# Every wait is a bounded poll. usage: band_sources.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"

start_agent node1 tok1 "201:dense:2:0.93:24000" "202:dense:2:0.93:24000" "203:dense:2:0.93:24000" || exit 1
wait_power_settled "$WORK/agents"
check $? "the agent's power settled before the controller starts"
job_cap_bounds "$WORK/agents" > "$WORK/bounds"
TOKEN=ctl-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
(umask 077 && printf '%s\n' "$TOKEN" > "$WORK/ctl-token")

# order DB LOWEST MIDDLE TOP [WHERE]: every event period from the third (of those WHERE
# selects) has job LOWEST at its lowest cap, TOP at its top cap, MIDDLE strictly between
order() {
    py "$1" '
lim = json.load(open(args[0]))
lo, top = lim["lo"], lim["top"]
a, m, z, where = args[1], args[2], args[3], args[4]
rows = c.execute("select id from ctl_periods where event = 1 and " + where + " order by id").fetchall()[2:]
bad, seen = 0, set()
for (pid,) in rows:
    cap = {j: cw for j, cw in c.execute("select job, cap_w from ctl_jobs where period = ?", (pid,))}
    seen.add(tuple(round(cap[j]) for j in (a, m, z)))
    if not (cap[a] <= lo[a] + 1 and cap[z] >= top[z] - 1 and lo[m] + 5 < cap[m] < top[m] - 5):
        bad += 1
        if bad <= 3:
            print(f"  period {pid}: caps {cap}")
print(f"  {len(rows)} periods, {bad} out of order; caps ({a}, {m}, {z}) W per GPU: {sorted(seen)}")
sys.exit(1 if bad or len(rows) < 4 else 0)' "$WORK/bounds" "$2" "$3" "$4" "${5:-1}"
}

# put PORT PATH BODY [TOKEN] — PUT on the controller's API; prints the HTTP code
put() {
    curl -s -o "$WORK/put.body" -w '%{http_code}' --max-time 5 -X PUT \
        -H "Authorization: Bearer ${4:-$TOKEN}" --data-binary "$3" "http://127.0.0.1:$1$2"
}
now() { python3 -c 'import time; print(time.time())'; }

# ---- 1. the API ------------------------------------------------------------------------------
printf '201 band=2\n202 band=1\n203 band=0\n' > "$WORK/policy"
"$PFI" control --agents "$WORK/agents" --policy "$WORK/policy" --listen 0 \
    --token-file "$WORK/ctl-token" --budget-w 2600 --start 1 --duration 120 --period 0.5 \
    --run-for 120 --db "$WORK/api.db" > "$WORK/api.out" 2> "$WORK/api.err" &
CTL_PID=$!
PORT=$(wait_ctl_port "$WORK/api.err")
[ -n "$PORT" ] || { echo "FAIL: no port"; cat "$WORK/api.err"; kill $CTL_PID; exit 1; }
wait_periods "$WORK/api.db" 6 "event = 1"
check $? "six event periods with the --policy bands"
order "$WORK/api.db" 203 202 201
check $? "--policy: 203 (band 0) at its lowest cap, 201 (band 2) at its top, 202 in between"

code=$(put "$PORT" /v1/jobs/203 '{"band": "high"}'); [ "$code" = 400 ]
check $? "PUT /v1/jobs/203 {\"band\": \"high\"}: 400 (got $code: $(cat "$WORK/put.body"))"
code=$(put "$PORT" /v1/jobs/203 '{"band": 3, "weight": 2}'); [ "$code" = 400 ] &&
    grep -q "unknown key 'weight'" "$WORK/put.body"
check $? "an unknown key: 400 naming it (got $code: $(cat "$WORK/put.body"))"
code=$(put "$PORT" /v1/jobs/203 '{"band": 2e6}'); [ "$code" = 422 ] &&
    grep -qF 'band 2000000: must be a number in [-1e6, 1e6] (higher: cut last)' "$WORK/put.body"
check $? "band 2e6 (outside [-1e6, 1e6]): 422 in every band's words (got $code: $(cat "$WORK/put.body"))"
# the value in its shortest exact form (%.10g said 1000000, inside the range)
code=$(put "$PORT" /v1/jobs/203 '{"band": 1000000.0000001}'); [ "$code" = 422 ] &&
    grep -qF 'band 1000000.0000001: must be a number in [-1e6, 1e6] (higher: cut last)' "$WORK/put.body"
check $? "band 1000000.0000001: 422 naming it as given (got $code: $(cat "$WORK/put.body"))"
code=$(put "$PORT" /v1/jobs/203 '{"band": 3}' wrong-token); [ "$code" = 401 ]
check $? "without the token: 401 (got $code)"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PORT/v1/jobs/203")
[ "$code" = 405 ]
check $? "GET /v1/jobs/203: 405 (got $code)"
t_put=$(now)
code=$(put "$PORT" /v1/jobs/203 '{"band": 3}'); [ "$code" = 200 ]
check $? "PUT /v1/jobs/203 {\"band\": 3}: 200 (got $code)"
wait_periods "$WORK/api.db" 6 "event = 1 and wall_s > $t_put"
check $? "six event periods after the PUT"
curl -s --max-time 5 "http://127.0.0.1:$PORT/v1/status" > "$WORK/status.json"
python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["job_bands"] == {"203": 3} else 1)' \
    "$WORK/status.json"
check $? "GET /v1/status: job_bands {\"203\": 3} ($(cat "$WORK/status.json"))"
order "$WORK/api.db" 202 201 203 "wall_s > $t_put"
check $? "after the PUT: 202 (band 1) at its lowest cap, 203 (band 3) at its top, 201 (2) in between"
# a band for a job not running (no period changes): said in plain digits (it was "1e+06")
code=$(put "$PORT" /v1/jobs/999 '{"band": 1e6}'); [ "$code" = 200 ]
check $? "PUT /v1/jobs/999 {\"band\": 1e6}: 200 (got $code)"
kill -TERM $CTL_PID
wait $CTL_PID
grep -q 'PUT /v1/jobs/203: band 3 (from the next period)' "$WORK/api.err"
check $? "the API's band is said on stderr"
grep -qF 'PUT /v1/jobs/999: band 1000000 (from the next period)' "$WORK/api.err"
check $? "the API's band 1e6 is said 1000000 on stderr"
# bands DB JOB=BANDS... — the audit log keeps each job's band every period (ctl_jobs.band:
# the API's were memory alone): JOB's bands in period order, runs of one band joined, are
# BANDS ("0,3": 0 in every period to some one, 3 in every one after)
bands() {
    db=$1
    shift
    py "$db" '
bad = 0
for a in args:
    job, want = a.split("=")
    seq = [b for (b,) in c.execute("select band from ctl_jobs where job = ? order by period", (job,))]
    runs = [x for k, x in enumerate(seq) if k == 0 or x != seq[k - 1]]
    got = ",".join("null" if x is None else "%g" % x for x in runs)
    print(f"  job {job}: {len(seq)} periods, bands {got} (want {want})")
    bad += got != want or len(seq) < 3
sys.exit(1 if bad else 0)' "$@"
}
bands "$WORK/api.db" 201=2 202=1 203=0,3
check $? "the audit log: 201 in band 2, 202 in 1 every period; 203 in 0, then 3 from the PUT on"
py "$WORK/api.db" '
got = [b for (b,) in c.execute("select j.band from ctl_periods p join ctl_jobs j on j.period = p.id"
       " where p.wall_s > ? and j.job = \"203\" order by p.id", (float(args[0]),))][1:]
print(f"  203 after the PUT, from the second period: bands {got}")
sys.exit(0 if len(got) >= 4 and all(b == 3 for b in got) else 1)' "$t_put"
check $? "the audit log: 203 in band 3 in the periods after the PUT (but the first: it may race)"
"$PFI" control status --db "$WORK/api.db" --json > "$WORK/status.json" 2> "$WORK/status.err"
python3 -c 'import json, sys
d = {j["job"]: j["band"] for j in json.load(open(sys.argv[1]))["jobs"]}
sys.exit(0 if d == {"201": 2, "202": 1, "203": 3} else 1)' "$WORK/status.json"
check $? "pfi control status --json: each job's band of the last period ($(head -c 400 "$WORK/status.json"))"
"$PFI" control status --db "$WORK/api.db" > "$WORK/status.txt" 2> "$WORK/status.err"
python3 - "$WORK/status.txt" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n\n", 1)[1].splitlines()
ok = lines[0].split()[-1] == "band"
got = {l.split()[0]: l.split()[-1] for l in lines[1:] if l.strip()}
sys.exit(0 if ok and got == {"201": "2", "202": "1", "203": "3"} else 1)
PY
check $? "pfi control status: a band column, each job's band ($(cat "$WORK/status.txt" | tail -4))"

# ---- 2. Slurm's QOS --------------------------------------------------------------------------
cat > "$WORK/squeue" <<'SQ'
#!/bin/sh
cat <<'J'
{"jobs": [
 {"job_id": 201, "job_state": "RUNNING", "nodes": "node1", "user_name": "a", "qos": "scavenger",
  "tres_alloc_str": "cpu=1,gres/gpu=2", "priority": 10, "admin_comment": "", "comment": ""},
 {"job_id": 202, "job_state": "RUNNING", "nodes": "node1", "user_name": "b", "qos": "normal",
  "tres_alloc_str": "cpu=1,gres/gpu=2", "priority": 10, "admin_comment": "", "comment": ""},
 {"job_id": 203, "job_state": "RUNNING", "nodes": "node1", "user_name": "c", "qos": "premium",
  "tres_alloc_str": "cpu=1,gres/gpu=2", "priority": 10, "admin_comment": "", "comment": ""}
]}
J
SQ
chmod +x "$WORK/squeue"
# (QOS names matched ignoring case: Slurm keeps them in lower case; squeue says 'premium')
QB=Premium=2,NORMAL=1,scavenger=0
# (a QOS name with a blank: sacctmgr splits its command line on blanks, so none has one)
for bad in premium 'premium=2,premium=1' 'premium=2,PREMIUM=1' 'premium=2e6' 'premium=2,' '=1' 'pre mium=1' \
    'premium=2, normal=1'; do
    "$PFI" control --agents "$WORK/agents" --budget-w 2600 --qos-band "$bad" --check \
        > "$WORK/bad.out" 2> "$WORK/bad.err"
    rc=$?
    [ $rc -eq 2 ] && grep -q -- '--qos-band' "$WORK/bad.err"
    check $? "--qos-band '$bad': exit 2 with a message (exit $rc: $(head -1 "$WORK/bad.err"))"
done
# --qos-band alone turns --slurm on: --check says so (the agents' test tokens made long:
# --check wants 16 bytes)
sed 's/ [^ ]*$/ 0123456789abcdef0123456789abcdef/' "$WORK/agents" > "$WORK/agents.long"
chmod 600 "$WORK/agents.long"
"$PFI" control --agents "$WORK/agents.long" --squeue "$WORK/squeue" --budget-w 2600 \
    --qos-band $QB --check > "$WORK/chk.out" 2> "$WORK/chk.err"
rc=$?
[ $rc -eq 0 ] && grep -q "Slurm (--slurm, turned on by --qos-band): running jobs from $WORK/squeue --json every period, a job's band from its QOS (--qos-band: 3 QOS named)" "$WORK/chk.out"
check $? "--qos-band without --slurm: --check says Slurm is on (exit $rc: $(cat "$WORK/chk.out" "$WORK/chk.err"))"
"$PFI" control --agents "$WORK/agents" --slurm --squeue "$WORK/squeue" --scontrol /bin/false \
    --qos-band $QB --budget-w 2600 --start 1 --duration 30 --period 0.5 --run-for 5 \
    --db "$WORK/qos.db" > "$WORK/qos.out" 2> "$WORK/qos.err"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 6 ]
check $? "pfi control --slurm --qos-band $QB ran (exit $rc)"
order "$WORK/qos.db" 201 202 203
check $? "QOS: 201 (scavenger, band 0) at its lowest cap, 203 (premium, 2) at its top, 202 between"
bands "$WORK/qos.db" 201=0 202=1 203=2
check $? "the audit log: the QOS's bands, 201 in 0, 202 in 1, 203 in 2 every period"
printf '202 band=5\n' > "$WORK/policy5"
"$PFI" control --agents "$WORK/agents" --slurm --squeue "$WORK/squeue" --scontrol /bin/false \
    --qos-band $QB --policy "$WORK/policy5" --budget-w 2600 --start 1 --duration 30 \
    --period 0.5 --run-for 5 --db "$WORK/qos5.db" > "$WORK/qos5.out" 2> "$WORK/qos5.err"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 6 ]
check $? "with --policy '202 band=5' (exit $rc)"
order "$WORK/qos5.db" 201 203 202
check $? "the policy's band wins over the QOS: 202 (band 5) at its top, 203 (2) between, 201 lowest"
bands "$WORK/qos5.db" 201=0 202=5 203=2
check $? "the audit log: 202's policy band 5 over its QOS's, every period"

if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    for f in "$WORK"/*.out "$WORK"/*.err; do echo "--- $f"; cat "$f"; done
fi
exit $fail
