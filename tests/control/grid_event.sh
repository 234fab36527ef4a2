#!/bin/sh
# End-to-end: pfi demo grid-event, compressed (--speed 1200: the 3.9-hour replay in 12 s) with
# three strategies. Its --json has, per strategy, the fields the README lists, six jobs with
# the demonstration's tiers, energy shed > 0, and the published 0.9096 beside them; the audit
# logs and settlements are left in --out. (The full replay at --speed 60, five strategies,
# is the README's table; too long for a test.)
# usage: grid_event.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
export PFI_AGENT_BIN=${PFI_AGENT_BIN:-$2}
SRC=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-grid-event.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
check() { if [ "$1" -ne 0 ]; then echo "FAIL: $2"; fail=1; else echo "ok: $2"; fi; }
"$PFI" demo grid-event --speed 1200 --strategies equal,fair-headroom,pfi-model --json \
    --out "$T/out" > "$T/demo.json" 2> "$T/demo.err"
check $? "pfi demo grid-event ran"
python3 - "$T/demo.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = d["published_weighted_performance"] == 0.9096 and sorted(d["strategies"]) == [
    "equal", "fair-headroom", "pfi-model"]
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
[ -s "$T/out/pfi-model.db" ] && [ -s "$T/out/equal.json" ]
check $? "audit logs and settlements in --out"
"$PFI" demo grid-event --bogus > /dev/null 2>&1
[ $? -eq 2 ]
check $? "an unknown option: exit 2"
[ $fail -ne 0 ] && cat "$T/demo.err"
exit $fail
