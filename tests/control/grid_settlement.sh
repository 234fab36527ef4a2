#!/bin/sh
# End-to-end: pfi report --settlement on a replayed event. A 35 % reduction 2-6 s into a 7 s
# controller run against 2 pfid agents, with tiers; settled with --speed 60 (the run stands
# for 7 minutes). The baseline, kWh shed (both baselines) and each job's performance and
# tokens lost agree with tests/golden/settlement_reference.py, computed independently from
# the same audit log; the tiers are reported; bad input is refused with the right exit code.
# usage: grid_settlement.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
. "$SRC/tests/control/lib.sh"

: > "$WORK/agents"
start_agent node1 tok1 "dense-a:dense:4:0.93:24000" "moe-a:moe-ft:4:0.55:9000" || exit 1
start_agent node2 tok2 "moe-b:moe-pt:4:0.8:16000" || exit 1
printf 'job,tier\ndense-a,Flex 1\nmoe-b,Flex 2\nmoe-a,Flex 3\n' > "$WORK/tiers.csv"
"$PFI" control --agents "$WORK/agents" --reduction 35% --start 2 --duration 4 --period 0.25 \
    --run-for 7 --tiers "$WORK/tiers.csv" --db "$WORK/s.db" --quiet > "$WORK/ctl.out" 2>&1 &
CTL_PID=$!
wait $CTL_PID
check $? "pfi control ran"
CTL_PID=""

"$PFI" report --settlement --json --speed 60 --interval 60 --pre-window 120 \
    --tiers "$WORK/tiers.csv" "$WORK/s.db" > "$WORK/s.json"
check $? "pfi report --settlement --json"
/usr/bin/python3 "$SRC/tests/golden/settlement_reference.py" "$WORK/s.db" 60 120 > "$WORK/g.json"
check $? "the golden settlement"
python3 - "$WORK/s.json" "$WORK/g.json" <<'PY'
import json, math, sys
s, g = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
def near(a, b, what):
    ok = a is not None and b is not None and math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if not ok:
        print(f"  {what}: pfi {a}, golden {b}")
    return ok
ok = near(s["baseline"]["pre_event_w"], g["pre_event_w"], "pre-event baseline")
ok &= near(s["energy_shed_kwh"], g["energy_shed_kwh"], "kWh shed (pre-event)")
ok &= near(s["energy_shed_uncapped_kwh"], g["energy_shed_uncapped_kwh"], "kWh shed (uncapped)")
ok &= near(sum(i["shed_kwh"] for i in s["intervals"]), g["energy_shed_kwh"], "sum of intervals")
jobs = {j["name"]: j for j in s["per_job"]}
ok &= sorted(jobs) == sorted(g["per_job"])
for name, gj in g["per_job"].items():
    ok &= near(jobs[name]["performance"], gj["performance"], name + " performance")
    ok &= near(jobs[name]["tokens_lost"], gj["tokens_lost"], name + " tokens lost")
ok &= jobs["dense-a"]["tier"] == "Flex 1" and jobs["moe-a"]["allowance"] == 0.5
ok &= len(s["intervals"]) == 4 and s["energy_shed_kwh"] > 0
print(f"  shed {s['energy_shed_kwh']:.4f} kWh, weighted performance {s['weighted_performance']:.4f}, "
      f"{s['tier_violations']} tier violations")
sys.exit(0 if ok else 1)
PY
check $? "baseline, kWh shed and per-job performance and tokens lost as the golden script"
# per interval: 50-s intervals against 15-s periods (0.25 s x 60), so periods straddle the
# boundaries: each period's energy split by time overlap, as the golden script's integral
for iv in 60 50; do
    "$PFI" report --settlement --json --speed 60 --interval $iv --pre-window 120 "$WORK/s.db" \
        > "$WORK/i$iv.json" &&
        /usr/bin/python3 "$SRC/tests/golden/settlement_reference.py" --interval $iv "$WORK/s.db" \
            60 120 > "$WORK/gi$iv.json"
    check $? "pfi report --settlement --interval $iv and the golden settlement"
    python3 - "$WORK/i$iv.json" "$WORK/gi$iv.json" <<'PY'
import json, math, sys
s, g = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ok = len(s["intervals"]) == len(g["intervals"]) and s.get("missing_periods") == g["missing_periods"]
for a, b in zip(s["intervals"], g["intervals"]):
    for k in ("start_s", "end_s", "target_kwh", "measured_kwh", "shed_kwh", "shed_uncapped_kwh",
              "missing_periods"):
        if not math.isclose(a.get(k, math.nan), b[k], rel_tol=1e-6, abs_tol=1e-9):
            print(f"  interval {b['start_s']:.0f} s {k}: pfi {a.get(k)}, golden {b[k]}")
            ok = False
print("  per interval target/measured/shed kWh: " + "; ".join(
    f"{i['target_kwh']:.4f}/{i['measured_kwh']:.4f}/{i['shed_kwh']:.4f}" for i in s["intervals"]))
sys.exit(0 if ok else 1)
PY
    check $? "--interval $iv: each interval's target, measured and shed kWh as the golden script"
done
# missing readings: three event periods' power gone (two NULL, one a stale 0 W from a log
# written before it was NULL): in no measured or shed sum, counted, each interval as the golden
cp "$WORK/s.db" "$WORK/m.db"
python3 - "$WORK/m.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
ids = [r[0] for r in c.execute("select id from ctl_periods where event = 1 order by id")]
c.execute("update ctl_periods set measured_w = NULL where id in (?, ?)", (ids[3], ids[8]))
c.execute("update ctl_periods set measured_w = 0 where id = ?", (ids[12],))
c.commit()
PY
"$PFI" report --settlement --json --speed 60 --interval 50 --pre-window 120 "$WORK/m.db" \
    > "$WORK/m.json" &&
    /usr/bin/python3 "$SRC/tests/golden/settlement_reference.py" --interval 50 "$WORK/m.db" 60 120 \
        > "$WORK/gm.json"
check $? "settlement of a log with missing readings"
python3 - "$WORK/m.json" "$WORK/gm.json" <<'PY'
import json, math, sys
s, g = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ok = s.get("missing_periods") == g["missing_periods"] == 3
ok &= math.isclose(s["energy_shed_kwh"], g["energy_shed_kwh"], rel_tol=1e-6)
for a, b in zip(s["intervals"], g["intervals"]):
    for k in ("measured_kwh", "shed_kwh", "missing_periods"):
        ok &= math.isclose(a.get(k, math.nan), b[k], rel_tol=1e-6, abs_tol=1e-9)
print(f"  missing {s.get('missing_periods')}, shed {s['energy_shed_kwh']:.4f} kWh "
      f"(golden {g['energy_shed_kwh']:.4f})")
sys.exit(0 if ok else 1)
PY
check $? "missing readings: in no sum, counted (3), each interval as the golden script"
"$PFI" report --settlement --interval 50 --speed 60 "$WORK/m.db" | grep -q '^missing: 3 event periods'
check $? "the table says how many periods were missing"
"$PFI" report --settlement "$WORK/s.db" > "$WORK/s.txt"
grep -q '^weighted performance (by GPUs)' "$WORK/s.txt"
check $? "the table form"
# a long job name (renamed in a copy of the log) shifts no column: every row's numbers end
# where the header's names end (review: the names overran a fixed 32-character column)
cp "$WORK/s.db" "$WORK/long.db"
python3 -c "import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute(\"update ctl_jobs set job = 'dense-a-fine-tuning-with-a-very-long-run-name' where job = 'dense-a'\")
c.commit()" "$WORK/long.db"
"$PFI" report --settlement "$WORK/long.db" > "$WORK/long.txt"
python3 - "$WORK/long.txt" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
i = next(k for k, l in enumerate(lines) if l.startswith("  job "))
head = lines[i]
rows = [l for l in lines[i + 1:] if l.strip()][:3]
ok = len(rows) == 3 and any("very-long-run-name" in r for r in rows)
# the right ends of the numeric columns' names; every row has a cell ending at each
want = [head.index(h) + len(h) for h in ("gpus", "performance", "life_perf", "tokens_lost")]
for r in rows:
    ends = {m.end() for m in re.finditer(r"\S+", r)}
    ok &= all(e in ends for e in want)
print("  header:", head.rstrip())
print("  row:   ", rows[0].rstrip() if rows else None)
sys.exit(0 if ok else 1)
PY
check $? "a long job name: the columns stay aligned"
# --skip past the event's end: refused, naming the file and saying every sample was left out
# (it printed 'largest excess over target: undefined W (undefined%)' and exit 0)
"$PFI" report --settlement --skip 99999 "$WORK/s.db" > "$WORK/skip.out" 2> "$WORK/skip.err"
[ $? -eq 2 ] && grep -q "s.db: --skip 99999 s leaves out every sample of the event" "$WORK/skip.err" &&
    ! grep -q 'undefined W\|undefined%' "$WORK/skip.out"
check $? "--skip past the event: exit 2, every sample left out, named ($(cat "$WORK/skip.err"))"
# pfi control status --json (review: every command has --json for machines): parsed with
# python3's json, each value against the audit log read with sqlite3
"$PFI" control status --db "$WORK/long.db" --json > "$WORK/status.json"
check $? "pfi control status --json"
python3 - "$WORK/status.json" "$WORK/long.db" <<'PY'
import json, math, sqlite3, sys
s = json.load(open(sys.argv[1]), parse_constant=lambda c: sys.exit(f"  {c} in the JSON"))
c = sqlite3.connect(sys.argv[2])
run = c.execute("select max(run) from ctl_periods").fetchone()[0]
n = c.execute("select count(*) from ctl_periods where run = ?", (run,)).fetchone()[0]
pid, ev, b, m, tp, up, ag = c.execute(
    "select id, event, budget_w, measured_w, tput_tok_s, agents_up, agents from ctl_periods "
    "where run = ? order by id desc limit 1", (run,)).fetchone()
def same(a, b):
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12))
ok = s["periods"] == n and s["period_id"] == pid and s["event"] == bool(ev)
ok &= same(s["budget_w"], b) and same(s["measured_w"], m) and same(s["tput_tok_s"], tp)
ok &= s["agents_up"] == up and s["agents"] == ag and s["db"] == sys.argv[2]
rows = c.execute("select job, class, gpus, pfi, source, cap_w, power_w, tput from ctl_jobs "
                 "where period = ? order by job", (pid,)).fetchall()
ok &= len(s["jobs"]) == len(rows) == 3
for j, r in zip(s["jobs"], rows):
    ok &= (j["job"], j["class"], j["gpus"], j["curve"]) == (r[0], r[1], r[2], r[4])
    ok &= same(j["pfi"], r[3]) and same(j["cap_w"], r[5]) and same(j["power_w"], r[6]) and same(j["tput_tok_s"], r[7])
print(f"  status --json: {s['periods']} periods, event {s['event']}, budget {s['budget_w']}, "
      f"measured {s['measured_w']:.0f} W, jobs {[j['job'] for j in s['jobs']]}")
sys.exit(0 if ok else 1)
PY
check $? "pfi control status --json: every value as the audit log has it"
# and its table keeps a long job name whole, the columns aligned
"$PFI" control status --db "$WORK/long.db" > "$WORK/status.txt"
python3 - "$WORK/status.txt" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
i = next(k for k, l in enumerate(lines) if l.startswith("job "))
head, rows = lines[i], [l for l in lines[i + 1:] if l.strip()]
want = [head.index(h) + len(h) for h in ("gpus", "pfi", "cap_w", "power_w", "tokens/s")]
ok = len(rows) == 3 and any(r.startswith("dense-a-fine-tuning-with-a-very-long-run-name ") for r in rows)
for r in rows:
    ends = {m.end() for m in re.finditer(r"\S+", r)}
    ok &= all(e in ends for e in want)
sys.exit(0 if ok else 1)
PY
check $? "pfi control status: a long job name whole, the columns aligned"
"$PFI" report --settlement "$WORK/none.db" > /dev/null 2>&1
[ $? -eq 1 ]
check $? "a missing audit log: exit 1"
# --reference: dense-a's reference tokens/s given (20 000: below its 24 000, so performance
# and tokens lost move), the others' from the pre-event window
printf 'job,tput_tok_s\ndense-a,20000\n' > "$WORK/ref.csv"
"$PFI" report --settlement --json --speed 60 --interval 60 --pre-window 120 \
    --reference "$WORK/ref.csv" "$WORK/s.db" > "$WORK/r.json"
check $? "pfi report --settlement --reference"
/usr/bin/python3 "$SRC/tests/golden/settlement_reference.py" "$WORK/s.db" 60 120 "$WORK/ref.csv" \
    > "$WORK/rg.json"
python3 - "$WORK/r.json" "$WORK/rg.json" "$WORK/s.json" <<'PY'
import json, math, sys
r, g, s = (json.load(open(a)) for a in sys.argv[1:4])
jobs = {j["name"]: j for j in r["per_job"]}
before = {j["name"]: j for j in s["per_job"]}
ok = jobs["dense-a"]["reference"] == "given" and jobs["dense-a"]["reference_tput_tok_s"] == 20000
ok &= all(jobs[n]["reference"] == "pre-event" for n in ("moe-a", "moe-b"))
for name, gj in g["per_job"].items():
    for k in ("performance", "tokens_lost"):
        ok &= math.isclose(jobs[name][k], gj[k], rel_tol=1e-6, abs_tol=1e-9)
ok &= jobs["dense-a"]["performance"] > before["dense-a"]["performance"]
ok &= jobs["moe-a"]["performance"] == before["moe-a"]["performance"]
print(f"  dense-a performance {before['dense-a']['performance']:.4f} -> "
      f"{jobs['dense-a']['performance']:.4f} against 20 000 tokens/s")
sys.exit(0 if ok else 1)
PY
check $? "--reference: the given job's performance and tokens lost as the golden script, the others unchanged"
printf 'job,tput_tok_s\ndense-a,0\n' > "$WORK/bad.csv"
"$PFI" report --settlement --reference "$WORK/bad.csv" "$WORK/s.db" > /dev/null 2> "$WORK/bad.err"
[ $? -eq 1 ] && grep -q "bad.csv:2: tput_tok_s" "$WORK/bad.err"
check $? "a reference of 0 tokens/s: exit 1 naming the file and line"
# --reference files that name no job, a job twice, absurd values or a row without its value
for body in "" 'job,tput_tok_s\n'; do
    printf "$body" > "$WORK/empty.csv"
    "$PFI" report --settlement --reference "$WORK/empty.csv" "$WORK/s.db" > /dev/null \
        2> "$WORK/bad.err"
    [ $? -eq 1 ] && grep -q "empty.csv: no job of the audit log named" "$WORK/bad.err"
    check $? "an empty or header-only reference: exit 1 naming the file"
done
printf 'job,tput_tok_s\nnobody,100\n' > "$WORK/unk.csv"
"$PFI" report --settlement --reference "$WORK/unk.csv" "$WORK/s.db" > /dev/null 2> "$WORK/bad.err"
[ $? -eq 1 ] && grep -q "unk.csv:2: job nobody is not in" "$WORK/bad.err" &&
    grep -q "unk.csv: no job of the audit log named" "$WORK/bad.err"
check $? "a reference naming only unknown jobs: a warning each, exit 1"
printf 'job,tput_tok_s\ndense-a,20000\nnobody,100\n' > "$WORK/unk.csv"
"$PFI" report --settlement --reference "$WORK/unk.csv" "$WORK/s.db" > "$WORK/unk.txt" \
    2> "$WORK/bad.err"
[ $? -eq 0 ] && grep -q "unk.csv:3: job nobody is not in" "$WORK/bad.err" &&
    grep -q '^  dense-a .* 20000 (given)$' "$WORK/unk.txt" &&
    grep -q '^  moe-a .*(pre-event)$' "$WORK/unk.txt"
check $? "one unknown job among known ones: a warning naming its line; the table names each reference"
printf 'job,tput_tok_s\ndense-a,20000\nmoe-a,100\ndense-a,1\n' > "$WORK/dup.csv"
"$PFI" report --settlement --reference "$WORK/dup.csv" "$WORK/s.db" > /dev/null 2> "$WORK/bad.err"
[ $? -eq 1 ] && grep -q "dup.csv:4: job dense-a: also on line 2" "$WORK/bad.err"
check $? "a job twice in the reference: exit 1 with both lines"
for v in 1e308 1e-300 -5 inf nan; do
    printf 'job,tput_tok_s\ndense-a,%s\n' $v > "$WORK/bad.csv"
    "$PFI" report --settlement --reference "$WORK/bad.csv" "$WORK/s.db" > "$WORK/bad.txt" \
        2> "$WORK/bad.err"
    [ $? -eq 1 ] && grep -q "bad.csv:2: tput_tok_s" "$WORK/bad.err" &&
        ! grep -qiw 'inf\|nan' "$WORK/bad.txt"
    check $? "a reference of $v tokens/s: exit 1 naming the file and line"
done
printf 'job,tput_tok_s\ndense-a\n' > "$WORK/bad.csv"
"$PFI" report --settlement --reference "$WORK/bad.csv" "$WORK/s.db" > /dev/null 2> "$WORK/bad.err"
[ $? -eq 1 ] && grep -q "bad.csv:2: tput_tok_s: missing" "$WORK/bad.err"
check $? "a reference row without its value: the tput_tok_s column named"
"$PFI" report --settlement --interval 0 "$WORK/s.db" > /dev/null 2>&1
[ $? -eq 2 ]
check $? "--interval 0: exit 2"
if [ $fail -ne 0 ] || [ -n "${PFI_TEST_VERBOSE:-}" ]; then cat "$WORK/ctl.out" "$WORK/s.json"; fi
exit $fail
