#!/bin/sh
# pfid's dcgm-exporter names (dcgm_names = true), copy utilisation and pfi_job_pfi_estimate
# (pfi_model), on two emulated GPUs running one emulated job:
# - every DCGM_FI_* family once (HELP, TYPE), one sample per GPU with the labels gpu, UUID,
#   device, modelName and Hostname, each value the pfi family's of the same scrape in
#   dcgm-exporter's unit (W, mJ, MHz, %, ratio); pfi_gpu_memory_copy_utilization_ratio;
# - promtool check metrics accepts the page;
# - pfi ingest reads the DCGM series alone (a dcgm-exporter consumer): 2 GPUs with power;
# - pfi_job_pfi_estimate = the model's intercept + coefficient x the job's mean over its GPUs
#   of dram_active x copy utilisation, from the same scrape (python, from the model JSON);
#   kept unchanged while the job is capped (the features move), until uncapped again;
# - a model naming a feature pfid does not read, and a file that is not a model: pfid --check
#   exits 2 naming it; SIGHUP with dcgm_names = false and no model: both go.
# Usage: dcgm.sh PFI PFID
set -u
pfi=$1 pfid=$2
T=$(mktemp -d) || exit 1
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
fail=0
bad() {
    echo "dcgm: FAIL: $*"
    fail=1
}
ok() { echo "dcgm: ok: $*"; }

(cd "$T" && "$pfi" library generate lib > /dev/null && "$pfi" fit lib -m model.json > /dev/null 2>&1) ||
    { bad "pfi library generate / pfi fit -m"; exit 1; }
(umask 077 && echo "dcgm-test-token-0123456789abcdef" > "$T/token")
conf() { # conf DCGM MODEL
    cat > "$T/pfid.conf" <<CONF
listen = 127.0.0.1:0
port_file = $T/port
backend = emulated
emulate = gpus=2,startup=0,alpha=0.4,tau=0.05,noise=0.01,seed=7
interval = 100ms
jobs = emulated
token_file = $T/token
journal = $T/journal
dcgm_names = $1
CONF
    [ -n "$2" ] && echo "pfi_model = $2" >> "$T/pfid.conf"
}
conf true "$T/model.json"
"$pfid" --config "$T/pfid.conf" --check > "$T/check.log" 2>&1 || { cat "$T/check.log"; bad "--check of a valid config"; }
"$pfid" --config "$T/pfid.conf" -q 2> "$T/pfid.log" &
PID=$!
i=0
while [ ! -s "$T/port" ]; do
    i=$((i + 1))
    [ $i -gt 100 ] && { cat "$T/pfid.log"; bad "pfid did not start"; exit 1; }
    sleep 0.1
done
URL=http://127.0.0.1:$(cat "$T/port")
scrape() { curl -sf "$URL/metrics" > "$T/$1"; }
# the first sample of each GPU (a bounded wait for the estimate)
i=0
until scrape m0 && grep -q '^pfi_job_pfi_estimate' "$T/m0"; do
    i=$((i + 1))
    [ $i -gt 100 ] && { bad "no pfi_job_pfi_estimate within 10 s"; break; }
    sleep 0.1
done

python3 - "$T/m0" "$T/model.json" > "$T/py.log" 2>&1 <<'PY' || { cat "$T/py.log"; bad "the scrape's DCGM series and estimate (above)"; }
import json, math, re, sys
text = open(sys.argv[1]).read()
model = json.load(open(sys.argv[2]))
fams, samples = {}, []
for line in text.splitlines():
    m = re.match(r"# (HELP|TYPE) (\S+) (.*)", line)
    if m:
        fams.setdefault(m.group(2), {})[m.group(1)] = fams.get(m.group(2), {}).get(m.group(1), 0) + 1
        continue
    m = re.match(r"(\w+)\{(.*)\} (\S+)$", line) or re.match(r"(\w+)() (\S+)$", line)
    labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
    samples.append((m.group(1), labels, float(m.group(3))))
def series(name):
    return [(l, v) for n, l, v in samples if n == name]
def by_gpu(name, key):
    return {l[key]: v for l, v in series(name)}
pairs = {  # DCGM name: (pfi name, scale)
    "DCGM_FI_DEV_SM_CLOCK": ("pfi_gpu_sm_clock_hertz", 1e-6),
    "DCGM_FI_DEV_MEM_CLOCK": ("pfi_gpu_memory_clock_hertz", 1e-6),
    "DCGM_FI_DEV_GPU_TEMP": ("pfi_gpu_temperature_celsius", 1),
    "DCGM_FI_DEV_POWER_USAGE": ("pfi_gpu_power_watts", 1),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": ("pfi_gpu_energy_joules_total", 1e3),
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": ("pfi_gpu_power_cap_watts", 1),
    "DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN": ("pfi_gpu_power_cap_min_watts", 1),
    "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX": ("pfi_gpu_power_cap_max_watts", 1),
    "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": ("pfi_gpu_power_cap_default_watts", 1),
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": ("pfi_gpu_power_cap_enforced_watts", 1),
    "DCGM_FI_DEV_GPU_UTIL": ("pfi_gpu_utilization_ratio", 100),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("pfi_gpu_memory_copy_utilization_ratio", 100),
    "DCGM_FI_PROF_SM_ACTIVE": ("pfi_gpu_sm_active_ratio", 1),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("pfi_gpu_tensor_active_ratio", 1),
    "DCGM_FI_PROF_DRAM_ACTIVE": ("pfi_gpu_dram_active_ratio", 1),
}
bad = []
uuids = by_gpu("pfi_gpu_up", "gpu")
host = series("pfi_gpu_up")[0][0]["hostname"]
for d, (p, scale) in pairs.items():
    if fams.get(d) != {"HELP": 1, "TYPE": 1}:
        bad.append(f"{d}: HELP/TYPE {fams.get(d)}")
    want = {l["gpu"]: (l["uuid"], v * scale) for l, v in series(p)}
    got = series(d)
    if len(got) != 2 or len(want) != 2:
        bad.append(f"{d}: {len(got)} samples, {p}: {len(want)} (want 2 each)")
    for l, v in got:
        if set(l) != {"gpu", "UUID", "device", "modelName", "Hostname"}:
            bad.append(f"{d}: labels {sorted(l)}")
            continue
        u, w = want.get(l["gpu"], (None, math.nan))
        if l["UUID"] != u or l["Hostname"] != host or l["device"] != "nvidia" + l["gpu"] or not l["modelName"]:
            bad.append(f"{d}{l}: labels do not match {p}'s")
        if not math.isclose(v, w, rel_tol=1e-12, abs_tol=1e-9):
            bad.append(f"{d}{{gpu={l['gpu']}}} = {v}, {p} x {scale} = {w}")
ty = [n for n in fams if n.startswith("DCGM_")]
if sorted(ty) != sorted(pairs):
    bad.append(f"DCGM families {sorted(set(ty) ^ set(pairs))} unexpected or missing")
if "counter" not in text.split("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION ")[1].split("\n")[0]:
    bad.append("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION is not a counter")
# the estimate, by hand: intercept + b * mean over the job's GPUs of dram x copy
(feat,) = model["features"]
assert feat == "dcgm_dram_active*dcgm_mem_copy_util", feat
dram = by_gpu("pfi_gpu_dram_active_ratio", "gpu")
copy = by_gpu("pfi_gpu_memory_copy_utilization_ratio", "gpu")
x = sum(dram[g] * copy[g] for g in dram) / len(dram)
want = model["coefficients"]["intercept"] + model["coefficients"][feat] * x
est = series("pfi_job_pfi_estimate")
if len(est) != 1 or not math.isclose(est[0][1], want, rel_tol=1e-12):
    bad.append(f"pfi_job_pfi_estimate {est}, by hand {want}")
print("\n".join(bad) if bad else f"estimate {want:.6f} = {model['coefficients']['intercept']:.4f} + "
      f"{model['coefficients'][feat]:.4f} x {x:.6f}")
sys.exit(1 if bad else 0)
PY
[ "$fail" = 0 ] && ok "15 DCGM families as the pfi ones, copy utilisation, $(cat "$T/py.log")"
# promtool: the page is valid; its only lint is dcgm-exporter's own naming (camelCase
# labels, an energy counter without _total) on the DCGM_ families
if command -v promtool > /dev/null 2>&1; then
    promtool check metrics < "$T/m0" > "$T/promtool.log" 2>&1
    if grep -v "^DCGM_[A-Z_]* \(label names should be written in 'snake_case' not 'camelCase'\|counter metrics should have \"_total\" suffix\)$" \
        "$T/promtool.log" | grep .; then
        bad "promtool check metrics (above)"
    else
        ok "promtool check metrics: valid; lint only on dcgm-exporter's names ($(wc -l < "$T/promtool.log") lines)"
    fi
fi

# a dcgm-exporter consumer: pfi ingest on the DCGM series alone, three scrapes of three
# sampling rounds (each a bounded poll until pfi_agent_samples_total has moved on)
samples() { sed -n 's/^pfi_agent_samples_total \(.*\)/\1/p' "$T/$1"; }
prev=$(samples m0)
for k in 1 2 3; do
    i=0
    until scrape "s$k" && [ -n "$(samples "s$k")" ] && [ "$(samples "s$k")" != "$prev" ]; do
        i=$((i + 1))
        [ $i -gt 100 ] && { bad "pfi_agent_samples_total did not move within 10 s"; break; }
        sleep 0.1
    done
    prev=$(samples "s$k")
    grep -v '^pfi_\|^# [A-Z]* pfi_' "$T/s$k" > "$T/d$k.prom"
done
if "$pfi" ingest --dry-run --format prometheus --interval 0.2 --telemetry "$T/d1.prom" \
    --telemetry "$T/d2.prom" --telemetry "$T/d3.prom" > "$T/ingest.log" 2>&1; then
    [ "$(grep -c 'power_w 3 valid / 0 missing' "$T/ingest.log")" = 2 ] &&
        ok "pfi ingest reads the DCGM series alone: 2 GPUs, $(grep -m1 '^power:' "$T/ingest.log")" ||
        { cat "$T/ingest.log"; bad "pfi ingest of the DCGM series: not 2 GPUs"; }
else
    cat "$T/ingest.log"
    bad "pfi ingest of the DCGM series failed"
fi

# capped: the estimate is kept while the features move; uncapped, it follows them again
U0=$(sed -n 's/^pfi_gpu_up{gpu="0",uuid="\([^"]*\)".*/\1/p' "$T/m0")
U1=$(sed -n 's/^pfi_gpu_up{gpu="1",uuid="\([^"]*\)".*/\1/p' "$T/m0")
caps() { # caps METHOD BODY
    curl -s -o "$T/put.log" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $(cat "$T/token")" \
        ${2:+--data "$2"} "$URL/v1/caps"
}
code=$(caps PUT "{\"request_id\": \"d1\", \"lease_s\": 60, \"caps\": [{\"uuid\": \"$U0\", \"cap_w\": 300}, {\"uuid\": \"$U1\", \"cap_w\": 300}]}")
[ "$code" = 200 ] || { cat "$T/put.log"; bad "PUT caps: $code"; }
wait_for() { # wait_for FILE PATTERN: scrape into FILE until PATTERN (10 s)
    i=0
    until scrape "$1" && grep -q "$2" "$T/$1"; do
        i=$((i + 1))
        [ $i -gt 100 ] && { bad "no '$2' in /metrics within 10 s"; return 1; }
        sleep 0.1
    done
}
# both caps in force (seen in one scrape), then under them until the features have moved
# (a bounded poll: the model on m3's features differs from m1's estimate)
wait_for m1 '^pfi_gpu_power_cap_watts{gpu="1",[^}]*} 300$' &&
    grep -q '^pfi_gpu_power_cap_watts{gpu="0",[^}]*} 300$' "$T/m1" || bad "caps not in force"
# live: what the model gives on m3's features (python, as above); kept: m1's and m3's estimate
live() {
    python3 - "$T/$1" "$T/model.json" <<'PY'
import json, re, sys
t = open(sys.argv[1]).read(); m = json.load(open(sys.argv[2]))
g = lambda n: [float(v) for v in re.findall(r"^%s\{[^}]*\} (\S+)$" % n, t, re.M)]
x = sum(a * b for a, b in zip(g("pfi_gpu_dram_active_ratio"), g("pfi_gpu_memory_copy_utilization_ratio"))) / 2
c = m["coefficients"]
print(c["intercept"] + c["dcgm_dram_active*dcgm_mem_copy_util"] * x)
PY
}
e1=$(sed -n 's/^pfi_job_pfi_estimate{[^}]*} //p' "$T/m1")
i=0
until scrape m3 && l3=$(live m3) && python3 -c "import sys; sys.exit(not abs($l3 - ${e1:-0}) >= 1e-3)"; do
    i=$((i + 1))
    [ $i -gt 100 ] && break
    sleep 0.1
done
e3=$(sed -n 's/^pfi_job_pfi_estimate{[^}]*} //p' "$T/m3")
if [ -n "$e1" ] && [ "$e1" = "$e3" ] && python3 -c "import sys; sys.exit(abs($l3 - $e3) < 1e-3)"; then
    ok "capped: estimate kept at $e3 while the features moved (under the cap they give $l3)"
else
    bad "capped: estimate $e1 then $e3; the live features give $l3"
fi
code=$(caps DELETE "")
[ "$code" = 200 ] || { cat "$T/put.log"; bad "DELETE caps: $code"; }
wait_for m4 '^pfi_gpu_power_cap_watts{gpu="1",[^}]*} 700$'
# a bounded poll until the estimate follows the live features again (10 s)
i=0
until scrape m5 && e5=$(sed -n 's/^pfi_job_pfi_estimate{[^}]*} //p' "$T/m5") && l5=$(live m5) &&
    [ -n "$e5" ] && python3 -c "import sys; sys.exit(not abs($l5 - $e5) < 1e-9 * $l5)"; do
    i=$((i + 1))
    [ $i -gt 100 ] && break
    sleep 0.1
done
python3 -c "import sys; sys.exit(not abs($l5 - $e5) < 1e-9 * $l5)" &&
    ok "uncapped again: estimate $e5 = the model on the live features" ||
    bad "uncapped again: estimate $e5, the live features give $l5"

# bad models
sed 's/dcgm_dram_active\*dcgm_mem_copy_util/dcgm_fb_used_mib/g' "$T/model.json" > "$T/fb.json"
"$pfid" --config "$T/pfid.conf" --set "pfi_model=$T/fb.json" --check > "$T/c.log" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "feature 'dcgm_fb_used_mib' is not one pfid reads" "$T/c.log" &&
    ok "a model on a feature pfid lacks: exit 2, named" || { cat "$T/c.log"; bad "unknown feature: exit $rc"; }
echo '{"not": "a model"}' > "$T/junk.json"
"$pfid" --config "$T/pfid.conf" --set "pfi_model=$T/junk.json" --check > "$T/c.log" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "pfi_model: .*junk.json" "$T/c.log" && ok "not a model: exit 2, file named" ||
    { cat "$T/c.log"; bad "not a model: exit $rc"; }
"$pfid" --config "$T/pfid.conf" --set dcgm_names=maybe --check > "$T/c.log" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "dcgm_names: bad value 'maybe': expected true or false" "$T/c.log" && ok "dcgm_names=maybe: exit 2" ||
    { cat "$T/c.log"; bad "dcgm_names=maybe: exit $rc"; }

# SIGHUP: without dcgm_names and model, both go
conf false ""
kill -HUP "$PID"
i=0
while :; do
    i=$((i + 1))
    [ $i -gt 100 ] && { bad "after SIGHUP: DCGM series or the estimate still there after 10 s"; break; }
    scrape m2 && ! grep -q '^DCGM_\|^pfi_job_pfi_estimate' "$T/m2" && grep -q '^pfi_gpu_power_watts' "$T/m2" && break
    sleep 0.1
done
[ $i -le 100 ] && ok "SIGHUP with dcgm_names = false, no pfi_model: no DCGM series, no estimate"
kill "$PID"
wait "$PID"
rc=$?
PID=""
[ "$rc" = 0 ] && ok "SIGTERM: pfid exits 0" || { tail -20 "$T/pfid.log"; bad "pfid exited $rc on SIGTERM"; }
[ "$fail" = 0 ] && echo "dcgm: all passed"
exit "$fail"
