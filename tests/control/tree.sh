#!/bin/sh
# End-to-end: pfi control --topology against 4 pfid agents (node1..node4, one job each, 16
# GPUs, about 10 kW uncapped) on a tree: a 9 000 W measured feed over two racks, rack r1 a
# 4 000 W reserve limit (its 8 GPUs' caps sum to at most 4 000 W), rack r2 none. Checked
# from the audit log: the caps under r1 never sum above its limit once the first period has
# acted, measured power stays under the feed (its limit less the margin is what the
# allocation holds) from the fourth period, the bound column names the level that bound (the rack and the feed
# outside the event, the site budget during a 7 000 W event), and outside the event the
# GPUs of r2 go back up to their original limits where the tree has room.
# usage: tree.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"

: > "$WORK/agents"
start_agent node1 tok1 "a1:dense:4:0.93:24000" || exit 1
start_agent node2 tok2 "b1:moe-ft:4:0.55:9000" || exit 1
start_agent node3 tok3 "c1:moe-pt:4:0.8:16000" || exit 1
start_agent node4 tok4 "d1:dense:4:0.9:20000" || exit 1
cat > "$WORK/topo" <<T
# a feed metered by the utility, two racks
feed feed - 9000 measured
rack r1 feed 4000
node node1 r1 -
node node2 r1 -
rack r2 feed -
node node3 r2 -
node node4 r2 -
T

# (--check looks at the agents file alone: the test agents' short tokens swapped for long ones)
sed 's/ [^ ]*$/ 0123456789abcdef0123456789abcdef/' "$WORK/agents" > "$WORK/agents.long"
chmod 600 "$WORK/agents.long"
"$PFI" control --agents "$WORK/agents.long" --topology "$WORK/topo" --check > "$WORK/chk.out" 2>&1
grep -q "target none (the --topology tree's limits only)" "$WORK/chk.out"
check $? "--topology --check with no target and no --listen: $(cat "$WORK/chk.out")"
"$PFI" control --agents "$WORK/agents" --topology "$WORK/topo" --budget-w 7000 --start 2 \
    --duration 3 --period 0.5 --run-for 8 --db "$WORK/t.db" --strategy oracle \
    > "$WORK/ctl.out" 2> "$WORK/ctl.err"
check $? "pfi control --topology ran (exit 0)"

py "$WORK/t.db" '
bad = 0
rack = {"a1": "r1", "b1": "r1", "c1": "r2", "d1": "r2"}
pids = [r[0] for r in c.execute("select id from ctl_periods order by id")]
for pid in pids[1:]:
    s = sum(cap * g for job, cap, g in c.execute(
        "select job, cap_w, gpus from ctl_jobs where period = ?", (pid,)) if rack[job] == "r1")
    if s > 4000 + 1e-6:
        bad += 1; print(f"  period {pid}: caps under r1 sum to {s:.0f} W > 4000")
rows = c.execute("select t_s, event, measured_w, bound from ctl_periods order by id").fetchall()
# from the fourth period: the jobs start with the controller, and the first periods learn
# their references from a power that still ramps up (a measured limit rests on them)
for t, ev, m, b in rows[3:]:
    if m > 9000:
        bad += 1; print(f"  t {t}: measured {m:.0f} W > feed 9000 W")
out = [b for t, ev, m, b in rows if not ev and t > 0]
inn = [b for t, ev, m, b in rows if ev]
if not any("rack \x27r1\x27 (reserve 4000 W, line 3)" in (b or "") for b in out):
    bad += 1; print("  no period outside the event says rack r1 bound:", out[:2])
if not any("feed \x27feed\x27 (measured" in (b or "") for b in out):
    bad += 1; print("  no period outside the event says the feed bound")
if not all("site budget" in (b or "") for b in inn[1:]):
    bad += 1; print("  event periods without the site budget bound:", inn)
last = pids[-1]
up = c.execute("select max(cap_w) from ctl_jobs where period = ? and job in (\x27c1\x27, \x27d1\x27)",
               (last,)).fetchone()[0]
print(f"  {len(pids)} periods; last caps under r2 up to {up:.0f} W")
sys.exit(1 if bad else 0)'
check $? "audit: rack r1 reserve limit and feed measured limit held, bound levels named"

"$PFI" control status --db "$WORK/t.db" > "$WORK/status" 2>&1
# status shows the last period's bound levels: the same text as the audit's last row (which
# levels bind in that one period depends on the measured power then: the audit check above
# asserts that both the rack and the feed are named over the run)
last_bound=$(sqlite3 "$WORK/t.db" "select bound from ctl_periods order by id desc limit 1")
[ -n "$last_bound" ] && grep "^bound " "$WORK/status" | grep -qF "$last_bound"
check $? "pfi control status names the level that bound in the last period: $(grep '^bound' "$WORK/status") (audit: $last_bound)"

# GET /metrics says which limits bound, each with its kind (issue 18 item 2): without a
# budget, rack r1's reserve limit (its 8 GPUs' top caps sum above 4 000 W) or the feed's
# measured one (about 10 kW uncapped) binds in every period: which of them, or both, depends
# on the power the agents measured in that period, so either is taken here; every series'
# kind label is then checked against the kind its limit names
"$PFI" control --agents "$WORK/agents" --topology "$WORK/topo" --period 0.5 --listen 0 \
    --run-for 60 --db "$WORK/m.db" > "$WORK/m.out" 2> "$WORK/m.err" &
CTL_PID=$!
PORT=$(wait_ctl_port "$WORK/m.err")
metrics_name_r1() {
    curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" > "$WORK/metrics" &&
        grep -qF -e "pfi_ctl_limit_bound{kind=\"reserve\",limit=\"rack 'r1' (reserve 4000 W, line 3)\"} 1" \
            -e "pfi_ctl_limit_bound{kind=\"measured\",limit=\"feed 'feed' (measured 8730 W, line 2)\"} 1" "$WORK/metrics"
}
[ -n "$PORT" ] && poll_until 60 metrics_name_r1
check $? "GET /metrics: $(grep '^pfi_ctl_limit_bound' "$WORK/metrics" | head -3 | tr '\n' ' ')"
# every series' kind is the one its limit names (the audit's text: '(reserve ...', '(measured')
python3 - "$WORK/metrics" <<'PY'
import re, sys
rows = [l for l in open(sys.argv[1]) if l.startswith("pfi_ctl_limit_bound{")]
bad = 0
for l in rows:
    m = re.match(r'pfi_ctl_limit_bound\{kind="(\w+)",limit="(.*)"\} 1$', l.rstrip("\n"))
    want = None if m is None else "ramp" if m.group(2).startswith("ramp") else \
        re.search(r"\((reserve|measured)", m.group(2)).group(1)
    if m is None or m.group(1) != want:
        bad += 1; print("  wrong:", l.strip())
sys.exit(1 if bad or not rows else 0)
PY
check $? "GET /metrics: each bound limit's kind label is its kind ($(grep -c '^pfi_ctl_limit_bound{' "$WORK/metrics") series)"
kill -TERM $CTL_PID
wait $CTL_PID
CTL_PID=""

# a node in two racks is refused, naming both lines
printf 'rack r1 - 4000\nrack r2 - 4000\nnode n1 r1 -\nnode n1 r2 -\n' > "$WORK/bad.topo"
"$PFI" control --agents "$WORK/agents" --topology "$WORK/bad.topo" --budget-w 7000 \
    --run-for 1 > /dev/null 2> "$WORK/bad.err"
rc=$?
grep -q "bad.topo:4:.*line 3" "$WORK/bad.err"
check $(( rc == 0 || $? != 0 )) "a node in two racks: refused (exit $rc) naming both lines: $(head -1 "$WORK/bad.err")"

# A node name mistyped (issue 18 item 1: a 1 000 W rack whose node name matches no agent held
# nothing and drew 2 636 W, silently): --check fails naming the level when the agents' URLs
# name their hosts, says it cannot tell when they are IP addresses; a run says once which
# agent's hostname names no level (its GPUs under the site budget alone) and which limited
# levels no agent sits under (stderr and the audit note). The right file passes --check.
printf 'feed feed - 9000 measured\nrack r1 feed 4000\nnode node1 r1 -\nnode node2 r1 -\nrack r2 feed 1000\nnode nod3 r2 -\nnode node4 feed -\n' > "$WORK/typo.topo"
i=0
: > "$WORK/agents.named"
while read -r url tok; do
    i=$((i + 1))
    echo "http://node$i:${url##*:} 0123456789abcdef0123456789abcdef" >> "$WORK/agents.named"
done < "$WORK/agents"
chmod 600 "$WORK/agents.named"
"$PFI" control --agents "$WORK/agents.named" --topology "$WORK/typo.topo" --check > "$WORK/chk2.out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "1 level(s) with a limit that no agent sits under.*rack 'r2' (1000 W, line 5)" "$WORK/chk2.out" &&
    grep -q "agent http://node3:.*names no --topology level" "$WORK/chk2.out"
check $? "--check, a mistyped node under a 1000 W rack: exit 2 naming rack r2 and the agent (exit $rc: $(cat "$WORK/chk2.out"))"
"$PFI" control --agents "$WORK/agents.named" --topology "$WORK/topo" --check > "$WORK/chk3.out" 2>&1
check $? "--check, the right file with the same agents: valid ($(cat "$WORK/chk3.out"))"
"$PFI" control --agents "$WORK/agents.long" --topology "$WORK/typo.topo" --check > "$WORK/chk4.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "4 agent(s) addressed by an IP address" "$WORK/chk4.out"
check $? "--check, agents by IP address: valid with a note that the first period will tell (exit $rc)"
"$PFI" control --agents "$WORK/agents" --topology "$WORK/typo.topo" --budget-w 7000 \
    --period 0.5 --run-for 2 --db "$WORK/typo.db" > "$WORK/typo.out" 2> "$WORK/typo.err"
check $? "pfi control with the mistyped topology ran (exit 0)"
[ "$(grep -c "reports hostname 'node3', which names no --topology level: its GPUs sit under the site budget alone" "$WORK/typo.err")" = 1 ] &&
    [ "$(grep -c 'names no --topology level' "$WORK/typo.err")" = 1 ] &&
    grep -q "warning: --topology: 1 level(s) with a limit that no agent sits under (4 of 4 agent(s) answered): rack 'r2' (1000 W, line 5)" "$WORK/typo.err"
check $? "the run says once that node3 names no level and that rack r2 holds no agent: $(grep -i 'topology' "$WORK/typo.err")"
[ "$(sqlite3 "$WORK/typo.db" "select count(*) from ctl_periods where note like 'topology: 1 limited level(s) no agent sits under: rack ''r2''%'")" = 1 ]
check $? "the audit log's note says it once"
! grep -q "topology" "$WORK/ctl.err"
check $? "the right file's run says nothing of the kind"

# Hostnames are case-insensitive (RFC 4343): a topology naming its nodes NODE1..NODE4 holds
# the agents whose hosts are node1..node4 (--check valid; a run with the tree's limits alone
# says no node astray, the caps under rack R1 keep to its 4 000 W from the second period and
# R1 is named as bound: its 8 GPUs draw about 5 kW uncapped)
sed 's/node \(node[0-9]\)/node \U\1/; s/ r1 / R1 /; s/rack r1/rack R1/' "$WORK/topo" > "$WORK/upper.topo"
grep -q '^node NODE3 r2 -$' "$WORK/upper.topo" && grep -q '^node NODE1 R1 -$' "$WORK/upper.topo"
check $? "the upper-case topology written: $(tr '\n' ';' < "$WORK/upper.topo")"
"$PFI" control --agents "$WORK/agents.named" --topology "$WORK/upper.topo" --check > "$WORK/chk5.out" 2>&1
rc=$?
[ $rc -eq 0 ] && ! grep -q "names no --topology level" "$WORK/chk5.out"
check $? "--check, nodes NODE1..NODE4 for hosts node1..node4: valid (exit $rc: $(cat "$WORK/chk5.out"))"
"$PFI" control --agents "$WORK/agents" --topology "$WORK/upper.topo" \
    --period 0.5 --run-for 2 --db "$WORK/upper.db" > "$WORK/upper.out" 2> "$WORK/upper.err"
rc=$?
[ $rc -eq 0 ] && ! grep -q "topology" "$WORK/upper.err"
check $? "a run with nodes NODE1..NODE4: exit $rc, nothing said of the topology ($(grep -i topology "$WORK/upper.err"))"
py "$WORK/upper.db" '
pids = [r[0] for r in c.execute("select id from ctl_periods order by id")]
bad = 0
for pid in pids[1:]:
    s = sum(cap * g for job, cap, g in c.execute(
        "select job, cap_w, gpus from ctl_jobs where period = ?", (pid,)) if job in ("a1", "b1"))
    if s > 4000 + 1e-6:
        bad += 1; print(f"  period {pid}: caps under R1 sum to {s:.0f} W > 4000")
bound = [b for (b,) in c.execute("select bound from ctl_periods order by id")]
if not any("rack \x27R1\x27" in (b or "") for b in bound):
    bad += 1; print("  no period says rack R1 bound:", bound)
sys.exit(1 if bad or len(pids) < 3 else 0)'
check $? "the caps under rack R1 (nodes NODE1, NODE2) keep to its 4000 W, R1 named as bound"
exit $fail
