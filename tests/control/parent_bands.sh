#!/bin/sh
# End-to-end: the site controller cuts by priority band across racks (issue 18 item 4). Two
# rack controllers (pfi control --listen --policy, no topology, no ramp) over one emulated
# pfid agent each, alike dense jobs (alpha 0.93): rack A runs a2 (band 2, 2 GPUs) and a1
# (band 1, 2 GPUs); rack B runs b1 (band 1, 2 GPUs) and b0 (band 0, 4 GPUs). Band 2 is in A
# only, band 0 in B only. A site controller (pfi control --children) holds a budget that
# takes all of band 0 and half of band 1, computed from the racks' own GET /v1/status
# (sum of min_w + band 2's headroom + half of band 1's). Checked:
#   - each rack's status reports its bands (A: 1, 2; B: 0, 1) within its range;
#   - on the racks' caps (their audit logs, every event period from the third): b0 at its
#     lowest cap, a2 at its top, a1 and b1 cut in between — the lowest band across the site
#     cut first. The split by feasible range alone (pfi_ctl_split, before the bands) gives
#     each rack the same fraction of its headroom: rack A then cuts a1 to its lowest and a2
#     below its top while b0 is still above its lowest;
#   - a child whose status has no "bands" (an older controller: a stub here) is split as one
#     band, and the site's note says so.
# Every wait is a bounded poll. usage: parent_bands.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"
PERIOD=0.5

: > "$WORK/agents"
start_agent node1 tok1 "a2:dense:2:0.93:24000" "a1:dense:2:0.93:24000" || exit 1
mv "$WORK/agents" "$WORK/agentsA"
start_agent node2 tok2 "b1:dense:2:0.93:24000" "b0:dense:4:0.93:24000" || exit 1
mv "$WORK/agents" "$WORK/agentsB"
cat "$WORK/agentsA" "$WORK/agentsB" > "$WORK/agents"
# the racks learn each job's reference from its first readings: they start once the agents'
# power has settled (three readings 0.3 s apart within 1 %), as control_hierarchy does
wait_power_settled "$WORK/agents"
check $? "the agents' power settled before the controllers start"
# each job's lowest and top caps, from its agent (the policy sets no floors)
job_cap_bounds "$WORK/agents" > "$WORK/bounds"
printf 'a2 band=2\na1 band=1\nb1 band=1\nb0 band=0\n' > "$WORK/policy"
for r in A B; do
    (umask 077 && printf 'tok%s-%s\n' "$r" "$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$WORK/token$r")
    "$PFI" control --agents "$WORK/agents$r" --listen 0 --token-file "$WORK/token$r" \
        --policy "$WORK/policy" --strategy oracle --period $PERIOD --run-for 60 \
        --db "$WORK/$r.db" > "$WORK/rack$r.out" 2> "$WORK/rack$r.err" &
    eval "PID$r=\$!"
    CTL_PID="$CTL_PID $!"
done
write_children A B || exit 1

# the racks' status (bounded poll until each has run 4 periods and reports its bands); the
# budget: every minimum, band 2's headroom and half of band 1's (band 0 cut to its floor)
python3 - "$WORK/children" > "$WORK/budget" <<'PY'
import json, sys, time, urllib.request
urls = [l.split()[0] for l in open(sys.argv[1]) if l.strip()]
want = [[1, 2], [0, 1]]
st = None
for _ in range(200):
    st = [json.load(urllib.request.urlopen(u + "/v1/status", timeout=2)) for u in urls]
    if all((s.get("periods") or 0) >= 4 and "bands" in s for s in st):
        break
    time.sleep(0.1)
else:
    print(f"the racks never reported bands: {st}", file=sys.stderr)
    sys.exit(1)
bad = 0
room = {}
for s, w, name in zip(st, want, "AB"):
    bands = s["bands"]
    print(f"  rack {name}: min {s['min_w']:.0f} W, max {s['max_w']:.0f} W, bands "
          + ", ".join(f"{b['band']:g} [{b['min_w']:.0f}, {b['max_w']:.0f}]" for b in bands),
          file=sys.stderr)
    if [b["band"] for b in bands] != w:
        bad += 1; print(f"  rack {name}: bands {[b['band'] for b in bands]}, expected {w}", file=sys.stderr)
    if sum(b["min_w"] for b in bands) > s["min_w"] + 1e-6 or any(b["min_w"] >= b["max_w"] for b in bands):
        bad += 1; print(f"  rack {name}: bands outside its range", file=sys.stderr)
    for b in bands:
        room[b["band"]] = room.get(b["band"], 0) + b["max_w"] - b["min_w"]
budget = sum(s["min_w"] for s in st) + room[2] + 0.5 * room[1]
print(f"{budget:.0f}")
# the split expected by hand: each rack its minimum, its band 2's headroom, half its band 1's
json.dump([s["min_w"] + sum((1 if b["band"] == 2 else 0.5 if b["band"] == 1 else 0)
                            * (b["max_w"] - b["min_w"]) for b in s["bands"]) for s in st],
          open(sys.argv[1] + ".expect", "w"))
sys.exit(1 if bad else 0)
PY
check $? "each rack's GET /v1/status reports its bands (A: 1, 2; B: 0, 1) within its range"
BUDGET=$(cat "$WORK/budget")
[ -n "$BUDGET" ] || exit 1
echo "  site budget $BUDGET W (band 0 to its floor, half of band 1)"
"$PFI" control --children "$WORK/children" --budget-w "$BUDGET" --period $PERIOD \
    --run-for 8 > "$WORK/site.out" 2> "$WORK/site.err"
rc=$?
[ $rc -eq 0 ]
check $? "the site controller ran (exit $rc)"

# the racks' caps, every event period from the third
for r in A B; do
    py "$WORK/$r.db" '
lim = json.load(open(args[0]))
lo, top = lim["lo"], lim["top"]
jobs = {"A": ["a2", "a1"], "B": ["b1", "b0"]}[args[1]]
rows = c.execute("select id from ctl_periods where event = 1 order by id").fetchall()[2:]
bad = 0
seen = {}
for (pid,) in rows:
    cap = {j: cw for j, cw in c.execute("select job, cap_w from ctl_jobs where period = ?", (pid,))}
    k = tuple(round(cap.get(j, -1)) for j in jobs)
    seen[k] = seen.get(k, 0) + 1
    ok = all(j in cap for j in jobs)
    if ok and "a2" in cap:
        ok = cap["a2"] >= top["a2"] - 1 and lo["a1"] + 5 < cap["a1"] < top["a1"] - 5
    if ok and "b0" in cap:
        ok = cap["b0"] <= lo["b0"] + 1 and lo["b1"] + 5 < cap["b1"] < top["b1"] - 5
    if not ok:
        bad += 1
        if bad <= 3:
            print(f"  period {pid}: caps {cap}")
print(f"  rack {args[1]}: {len(rows)} event periods from the third, {bad} out of band order; "
      f"caps {jobs} W per GPU (lowest {[lo[j] for j in jobs]}, top {[top[j] for j in jobs]}): "
      + ", ".join(f"{list(k)} x{n}" for k, n in sorted(seen.items(), key=lambda kv: -kv[1])))
sys.exit(1 if bad or len(rows) < 6 else 0)' "$WORK/bounds" $r
    check $? "rack $r: $([ $r = A ] && echo 'a2 (band 2) at its top, a1 (band 1) cut in between' || echo 'b0 (band 0) at its lowest cap, b1 (band 1) cut in between'), every event period"
done
# the site's shares, every event period, against the split expected from the racks' status
# (within 1 % of the budget: the racks' estimates move a little from period to period)
python3 - "$WORK/site.out" "$WORK/children.expect" "$BUDGET" <<'PY'
import json, sys
want = json.load(open(sys.argv[2]))
budget = float(sys.argv[3])
rows = [l.split() for l in open(sys.argv[1]) if l.split()[:1] != ["t_s"]]
sh = [[float(x) for x in r[6].split(",")] for r in rows if len(r) > 6 and r[1] == "yes"]
bad = [s for s in sh if any(abs(a - b) > 0.01 * budget for a, b in zip(s, want))]
print(f"  site: {len(sh)} event periods, shares (A, B) {sorted(set(tuple(s) for s in sh))} W; "
      f"expected {[round(w) for w in want]} W")
sys.exit(1 if bad or len(sh) < 10 else 0)
PY
check $? "the site's shares: band 0 (rack B) to its floor, band 1 halved in both racks, band 2 (rack A) whole"

# an older child (a stub whose status has no "bands"): one band, said in the note
python3 - "$WORK/stub.port" <<'PY' &
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def reply(self, body):
        b = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        self.reply({"t_s": 1, "event": False, "budget_w": None, "measured_w": 900,
                    "reserved_w": 0, "min_w": 400, "max_w": 1000, "ramp_limited": False,
                    "periods": 5})
    def do_PUT(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.reply({"ok": True})
s = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
PY
STUB=$!
CTL_PID="$CTL_PID $STUB"
n=0
while [ ! -s "$WORK/stub.port" ]; do
    n=$((n + 1))
    [ $n -gt 100 ] && { echo "the stub child did not start"; exit 1; }
    sleep 0.05
done
head -1 "$WORK/children" > "$WORK/children2"
echo "http://127.0.0.1:$(cat "$WORK/stub.port") stub-token-0123456789abcdef" >> "$WORK/children2"
"$PFI" control --children "$WORK/children2" --budget-w "$BUDGET" --period $PERIOD \
    --run-for 1.5 > "$WORK/old.out" 2> "$WORK/old.err"
rc=$?
[ $rc -eq 0 ] && grep -q "child http://127.0.0.1:$(cat "$WORK/stub.port") reports no bands: its range split as one band (0)" "$WORK/old.out"
check $? "an older child without bands: split as one band, the note says so (exit $rc: $(awk '$2 == "yes"' "$WORK/old.out" | head -1))"
kill "$STUB" "$PIDA" "$PIDB" 2>/dev/null
if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then
    for f in "$WORK"/*.out "$WORK"/*.err; do echo "--- $f"; cat "$f"; done
fi
exit $fail
