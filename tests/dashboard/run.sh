#!/bin/sh
# contrib/grafana/pfi.json against a real Prometheus: 3 emulated pfid agents (mixed jobs,
# scripts/cluster-lib.sh) given a `pfi fit` model by SIGHUP (pfi_job_pfi_estimate), the
# controller through a 30 % event with --listen, and Debian's Prometheus on loopback
# scraping both (jobs "pfid" and "pfi-control", as contrib/prometheus/pfi-alerts.yml, which it
# loads too: every rule must be healthy). Every PromQL expression of the dashboard, its
# variables put in ($hostname: .*), must return at least one series during the event; one
# that reads only metrics not in src yet (the controller's new ones) is reported and skipped.
# The JSON is checked as a dashboard: schemaVersion, uid, title, a Prometheus datasource
# variable, and every panel with an id, type, title, gridPos, datasource and targets (refId,
# expr). Skipped (77) without prometheus.
# Usage: run.sh PFI PFID SOURCE_DIR
set -u
PFI=$1 PFI_AGENT_BIN=$2 SRC=$3
dash=$SRC/contrib/grafana/pfi.json
fail=0
bad() {
    echo "dashboard: FAIL: $*"
    fail=1
}
# the structure first (no Prometheus needed)
python3 - "$dash" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
bad = []
if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < 30:
    bad.append(f"schemaVersion {d.get('schemaVersion')!r}")
for k in ("uid", "title"):
    if not isinstance(d.get(k), str) or not d[k]:
        bad.append(f"no {k}")
tv = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
if tv.get("datasource", {}).get("type") != "datasource" or tv["datasource"].get("query") != "prometheus":
    bad.append("no Prometheus datasource variable 'datasource'")
ids = set()
for p in d.get("panels", []):
    name = p.get("title", "?")
    for k in ("id", "type", "title", "gridPos", "datasource", "targets"):
        if k not in p:
            bad.append(f"panel {name!r}: no {k}")
    if p.get("id") in ids:
        bad.append(f"panel {name!r}: id {p.get('id')} twice")
    ids.add(p.get("id"))
    g = p.get("gridPos", {})
    if not all(isinstance(g.get(k), int) for k in "xywh") or g.get("x", 0) + g.get("w", 0) > 24:
        bad.append(f"panel {name!r}: gridPos {g}")
    if p.get("datasource") != {"type": "prometheus", "uid": "${datasource}"}:
        bad.append(f"panel {name!r}: datasource {p.get('datasource')}")
    refs = [t.get("refId") for t in p.get("targets", [])]
    if not refs or len(set(refs)) != len(refs) or not all(t.get("expr") for t in p["targets"]):
        bad.append(f"panel {name!r}: targets without refId or expr")
if len(ids) < 8:
    bad.append(f"{len(ids)} panels")
print("\n".join("dashboard: FAIL: " + b for b in bad) if bad else
      f"dashboard: JSON: schemaVersion {d['schemaVersion']}, {len(ids)} panels, each with datasource and targets")
sys.exit(1 if bad else 0)
PY
command -v prometheus > /dev/null 2>&1 || { echo "dashboard: queries skipped: no prometheus (apt-get install prometheus)"; exit 77; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pfi-dash.XXXXXX")
. "$SRC/scripts/cluster-lib.sh"
CTL_PID=""
cleanup() {
    [ -n "$CTL_PID" ] && kill "$CTL_PID" 2> /dev/null && wait "$CTL_PID" 2> /dev/null
    cluster_cleanup
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 2' HUP INT TERM

(cd "$WORK" && "$PFI" library generate lib > /dev/null && "$PFI" fit lib -m model.json > /dev/null 2>&1) ||
    { bad "pfi library generate / fit"; exit 1; }
PFI_AGENT_INTERVAL=200ms
mixed_cluster 3 || { bad "agents did not start"; exit 1; }
# the agents' model, by SIGHUP (their config files are cluster-lib's)
for d in "$WORK"/agent.*/; do
    echo "pfi_model = $WORK/model.json" >> "$d/pfid.conf"
done
for p in $CLUSTER_PIDS; do kill -HUP "$p"; done

"$PFI" control --agents "$WORK/agents" --reduction 30% --start 3 --duration 60 --period 0.5 \
    --run-for 90 --listen 0 --db "$WORK/audit.db" --quiet 2> "$WORK/ctl.err" > "$WORK/ctl.out" &
CTL_PID=$!
n=0
while ! grep -q 'listening on 127.0.0.1:' "$WORK/ctl.err" 2> /dev/null; do
    n=$((n + 1))
    [ $n -gt 200 ] && { cat "$WORK/ctl.err"; bad "the controller did not listen"; exit 1; }
    sleep 0.05
done
CTL_PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/ctl.err" | head -1)

port=$(free_port)
targets=$(awk '{sub("http://", "", $1); printf "%s\"%s\"", (NR > 1 ? ", " : ""), $1}' "$WORK/agents")
cat > "$WORK/prometheus.yml" <<YML
global:
  scrape_interval: 500ms
  scrape_timeout: 400ms
  evaluation_interval: 1s
rule_files: ["$SRC/contrib/prometheus/pfi-alerts.yml"]
scrape_configs:
  - job_name: pfid
    honor_labels: true
    static_configs: [{targets: [$targets]}]
  - job_name: pfi-control
    honor_labels: true
    static_configs: [{targets: ["127.0.0.1:$CTL_PORT"]}]
YML
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom-data" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn 2>> "$WORK/prometheus.log" &
PROM_PID=$!
PROM_URL=http://127.0.0.1:$port

# poll (bounded: 60 s) until, during the event, every expression has a series
python3 - "$dash" "$PROM_URL" "$SRC" <<'PY' || fail=1
import json, pathlib, re, sys, time, urllib.parse, urllib.request
dash, url, src = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
d = json.load(open(dash))
exprs = [(p["title"], t["refId"], t["expr"]) for p in d["panels"] for t in p["targets"]]
text = "".join(p.read_text(errors="replace") for sub in ("src/agent", "src/cli")
               for p in (src / sub).glob("*.c"))
def exported(m):
    return f'"{m}' in text or f"{m}{{" in text or f"{m} " in text
def query(e):
    e = e.replace("$hostname", ".*")
    q = urllib.parse.urlencode({"query": e})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=5) as r:
            j = json.load(r)
    except Exception as ex:
        return None, str(ex)
    if j.get("status") != "success":
        return None, j.get("error", "?")
    return len(j["data"]["result"]), ""
skip = {}
for title, ref, e in exprs:
    names = set(re.findall(r"\b(pfi_[a-z_]+)\b", e))
    missing = sorted(m for m in names if not exported(m))
    if missing and len(missing) == len(names):
        skip[(title, ref)] = missing
deadline = time.time() + 60
while True:
    event, _ = query("pfi_ctl_event_active == 1")
    results = {(t, r): query(e) for t, r, e in exprs if (t, r) not in skip}
    empty = [(k, v) for k, v in results.items() if not v[0]]
    if event and not empty:
        break
    if time.time() > deadline:
        for (t, r), (n, err) in empty:
            print(f"dashboard: FAIL: {t!r} {r}: {n if n is not None else 'error'} series {err}")
        if not event:
            print("dashboard: FAIL: no event in force within 60 s")
        sys.exit(1)
    time.sleep(0.5)
for (t, r), m in skip.items():
    print(f"dashboard: skipped {t!r} {r}: {', '.join(m)} not exported by this tree yet")
print(f"dashboard: {len(results)} expressions each return >= 1 series during the event "
      f"({sum(v[0] for v in results.values())} series in all)")
# the alert rules loaded into the same server are healthy
with urllib.request.urlopen(f"{url}/api/v1/rules", timeout=5) as r:
    rules = [x for g in json.load(r)["data"]["groups"] for x in g["rules"]]
unhealthy = [x["name"] for x in rules if x.get("health") not in ("ok", "unknown")]
if len(rules) < 10 or unhealthy:
    print(f"dashboard: FAIL: {len(rules)} alert rules loaded, unhealthy: {unhealthy}")
    sys.exit(1)
print(f"dashboard: pfi-alerts.yml: {len(rules)} rules loaded and evaluated in Prometheus")
PY
[ "$fail" = 0 ] && echo "dashboard: all passed"
exit "$fail"
