#!/bin/sh
# End-to-end: pfi demo grid-event, compressed: the SRP event at --speed 240 with a 0.5 s
# period (a period is two minutes of the event, as the demo's default --speed 120 with 1 s),
# all five strategies side by side on the same emulated GPUs and a real Prometheus, the
# optimising strategies on the demo's objective (--objective balanced: weighted plus mean
# performance), every run settled against the same reference tokens/s a job (the GPUs'
# noise-free 400 W sweep). Checked on its --json: the fields, six jobs with the
# demonstration's tiers, energy shed > 0, the published 0.9096 beside them; the replay tracks
# the target (every strategy at most 2 % over it after the ramp, no tier violated); the
# ranking in both scores and in their sum (the objective): oracle and pfi-model each above
# both fair-headroom and equal (by 0.0037-0.0040 weighted, 0.0033-0.0037 mean over 3
# runs), and the oracle at least pfi-model less 0.002 in each. The oracle and pfi-model are one optimiser on two sweeps of the same
# GPUs (10 W noise-free; 50 W with a 1 % noise, smoothed), which on the fitted curves reach
# the same objective within 0.0002 (a static computation), so what separates them in a
# replay is the measurement and the feedback: oracle - pfi-model -0.0008 to -0.0001 weighted,
# +0.0006 to +0.0014 mean, -0.0003 to +0.0013 in the sum over 3 runs, hence the 0.002. The
# controllers count the event in their own periods and wait for readings taken after their
# last cap change, so a loaded host slows the replay instead of changing its outcome. The
# audit logs and settlements are left in --out.
set -u
PFI=$1
export PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-grid-event.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
check() { if [ "$1" -ne 0 ]; then echo "FAIL: $2"; fail=1; else echo "ok: $2"; fi; }
"$PFI" demo grid-event --speed 240 --period 0.5 --json --out "$T/out" > "$T/demo.json" \
    2> "$T/demo.err"
check $? "pfi demo grid-event ran"
python3 - "$T/demo.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = d["published_weighted_performance"] == 0.9096 and d["objective"] == "balanced" and sorted(d["strategies"]) == [
    "equal", "fair-headroom", "oracle", "pfi-model", "pfi-weighted"]
keys = {"max_over_target_pct", "seconds_over_target", "energy_shed_kwh", "weighted_performance",
        "mean_performance", "tier_violations", "per_job"}
tiers = {"ft_llama_8b_p3-c6rr6ijz": "Flex 2", "infer_llama_8b_32g-ssac4bap": "Flex 3",
         "infer_llama_8b_48g-hgfu2h87": "Flex 1", "infer_llama_8b_48g-xhganfr6": "Flex 2",
         "pt_mpt_13b_sm-gnn16mkt": "Flex 3", "pt_mpt_7b_fast-qryepi9o": "Flex 3"}
for s, r in d["strategies"].items():
    ok &= set(r) == keys and r["energy_shed_kwh"] > 0 and 0 < r["weighted_performance"] <= 1
    ok &= {j["name"]: j["tier"] for j in r["per_job"]} == tiers
    print(f"  {s}: shed {r['energy_shed_kwh']:.1f} kWh, weighted {r['weighted_performance']:.4f}, "
          f"max over {r['max_over_target_pct']:.2f} %, {r['tier_violations']} tier violations")
sys.exit(0 if ok else 1)
PY
check $? "--json: the fields, six jobs with their tiers, the published value"
python3 - "$T/demo.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["strategies"]
bad = [s for s, v in r.items() if not (v["max_over_target_pct"] <= 2 and v["tier_violations"] == 0)]
print("  over the target by more than 2 % or a tier violated:", bad or "none")
sys.exit(1 if bad else 0)
PY
check $? "every strategy within 2 % of the target after the ramp, no tier violated"
python3 - "$T/demo.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["strategies"]
ok = True
score = {s: {k: r[s][k] for k in ("weighted_performance", "mean_performance")} for s in r}
for s in score:
    score[s]["sum"] = score[s]["weighted_performance"] + score[s]["mean_performance"]
for k in ("weighted_performance", "mean_performance", "sum"):
    o, m, f, e = (score[s][k] for s in ("oracle", "pfi-model", "fair-headroom", "equal"))
    print(f"  {k}: oracle {o:.4f}, pfi-model {m:.4f}, fair-headroom {f:.4f}, equal {e:.4f}"
          f" (oracle - pfi-model {o - m:+.4f}, the lower of them - the higher of the others"
          f" {min(o, m) - max(f, e):+.4f})")
    ok &= min(o, m) > max(f, e) and o >= m - 0.002
sys.exit(0 if ok else 1)
PY
check $? "ranking (weighted, mean, their sum): oracle and pfi-model above fair-headroom and equal, oracle >= pfi-model - 0.002"
[ -s "$T/out/pfi-model.db" ] && [ -s "$T/out/equal.json" ]
check $? "audit logs and settlements in --out"
# the power swings in event time (issue 18 item 2: a replay's figures are of the event, not
# of the replay): each strategy's max ramp is the audit log's largest |dW| / dt over its
# times x 240 (by hand here from the log), and 0.1-20 Hz cannot be told at 120 s periods
grep -q "^power swings in event time (the replay's seconds x 240):" "$T/demo.err"
check $? "the demo says its power swings are in event time"
python3 - "$T/demo.err" "$T/out" <<'PY'
import math, re, sqlite3, sys
said = {m.group(1): m.group(2) for m in re.finditer(r"^  ([\w-]+): max ramp ([0-9.]+) W/s, .*0\.1-20 Hz oscillation undefined \(sampled below 0\.2 Hz\)", open(sys.argv[1]).read(), re.M)}
bad = 0
for s in ("equal", "fair-headroom", "pfi-weighted", "pfi-model", "oracle"):
    c = sqlite3.connect(f"{sys.argv[2]}/{s}.db")
    rows = c.execute("select t_s, measured_w + coalesce(reserved_w, 0) from ctl_periods where run = "
                     "(select max(run) from ctl_periods) order by id").fetchall()
    rows = [(t * 240, w) for t, w in rows if w is not None and math.isfinite(w)]
    ramp = max(abs(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(rows, rows[1:]))
    ok = s in said and abs(float(said[s]) - ramp) <= 0.05 + 1e-9
    print(f"  {s}: said {said.get(s)} W/s, the log's {ramp:.3f} W/s" + ("" if ok else "  DIFFERENT"))
    bad += not ok
sys.exit(1 if bad else 0)
PY
check $? "each strategy's max ramp in event time (the log's over its times x 240)"
"$PFI" demo grid-event --bogus > /dev/null 2>&1
[ $? -eq 2 ]
check $? "an unknown option: exit 2"
"$PFI" demo grid-event --objective bogus > /dev/null 2>&1
[ $? -eq 2 ]
check $? "an unknown objective: exit 2"
[ $fail -ne 0 ] && cat "$T/demo.err"
exit $fail
