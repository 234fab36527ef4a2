#!/bin/sh
# A Prometheus server (Debian's prometheus, on loopback, its own config and storage under a
# temporary directory, 1 s scrapes) scrapes two pfid agents on fake NVML nodes; PromQL
# queries through /api/v1/query must give the expected power per job:
#   node-a: GPU-a0 600 W (job-x), GPU-a1 500 W (job-y)
#   node-b: GPU-b0 400 W (job-x), GPU-b1 650 W (job-y) capped to 450 W through the API
#   → job-x 1000 W, job-y 950 W.
# Skipped (77) without prometheus. Usage: prometheus.sh PFID FAKE_NVML_LIBRARY
set -u
PFID=$1
FAKE=$2
command -v prometheus >/dev/null 2>&1 || { echo "prometheus not installed: skipped"; exit 77; }
T=$(mktemp -d /tmp/pfid-prom.XXXXXX)
PIDS=""
cleanup() {
    for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT INT TERM
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/token"
chmod 600 "$T/token"
TOKEN=$(cat "$T/token")

agent() { # agent NODE DRAW0 DRAW1 -> port in $T/NODE.port
    n=$1
    printf 'gpu 0 uuid=GPU-%s0 draw=%s000\ngpu 1 uuid=GPU-%s1 draw=%s000\n' "$n" "$2" "$n" "$3" >"$T/$n.state"
    printf 'GPU-%s0 job-x\nGPU-%s1 job-y\n' "$n" "$n" >"$T/$n.map"
    PFI_RUN_DIR="$T/$n.run" FAKE_NVML_STATE="$T/$n.state" "$PFID" -b nvml -s nvml_library="$FAKE" -l 127.0.0.1:0 \
        -s port_file="$T/$n.port" -t "$T/token" -j "$T/$n.journal" -i 200ms \
        -s jobs=static -s jobs_file="$T/$n.map" -s hostname="node-$n" 2>"$T/$n.log" &
    PIDS="$PIDS $!"
    i=0
    while [ ! -s "$T/$n.port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    [ -s "$T/$n.port" ] || { bad "agent $n did not start"; cat "$T/$n.log"; exit 1; }
}
agent a 600 500
agent b 400 650
PA=$(cat "$T/a.port")
PB=$(cat "$T/b.port")
code=$(curl -s -o "$T/put" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
    --data-binary '{"request_id": "p1", "lease_s": 600, "caps": [{"uuid": "GPU-b1", "cap_w": 450}]}' \
    "http://127.0.0.1:$PB/v1/caps")
[ "$code" = 200 ] && ok "cap GPU-b1 to 450 W" || { bad "PUT $code"; cat "$T/put"; }

PP=$(free_port)
cat >"$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: pfid
    honor_labels: true   # keep pfid's job label (the training job), not the scrape job's
    static_configs:
      - targets: ['127.0.0.1:$PA', '127.0.0.1:$PB']
YML
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/data" \
    --web.listen-address="127.0.0.1:$PP" --log.level=warn >"$T/prom.log" 2>&1 &
PIDS="$PIDS $!"

query() { # query PROMQL -> "job=value,..." sorted
    curl -s --max-time 5 "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" |
        python3 -c 'import json,sys
try:
    d = json.load(sys.stdin)
    r = sorted("%s=%.1f" % (x["metric"].get("job", "?"), float(x["value"][1])) for x in d["data"]["result"])
    print(",".join(r))
except Exception:
    print("")'
}
want="job-x=1000.0,job-y=950.0"
for q in 'sum by (job) (pfi_job_power_watts)' \
    'sum by (job) (pfi_gpu_power_watts * on (uuid) group_left (job) pfi_gpu_job_info)'; do
    got=""
    i=0
    while [ "$got" != "$want" ] && [ $i -lt 60 ]; do
        sleep 0.5
        got=$(query "$q")
        i=$((i + 1))
    done
    [ "$got" = "$want" ] && ok "PromQL '$q' = $got" || { bad "PromQL '$q' = '$got', want $want"; tail -5 "$T/prom.log"; }
done
up=$(query 'count(pfi_gpu_up == 1)')
[ "$up" = "?=4.0" ] && ok "4 GPUs up on 2 agents" || bad "pfi_gpu_up: $up"

# stop: caps restored
for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
wait
PIDS=""
grep -c 'limit=700000 ' "$T/b.state" | grep -q '^2$' && ok "node-b back on its original limits" || { bad "node-b limits"; cat "$T/b.state"; }
[ ! -e "$T/b.journal" ] && ok "no journal left" || bad "journal left"
exit $fail
