# Shared by tests/control/*.sh, bench/control.sh and scripts/demo-cluster.sh: start emulated
# pfid agents, a private Prometheus server, and clean up every process started (source it;
# set PFI_AGENT_BIN (the pfid binary) and WORK first, and call cluster_cleanup from a trap).
# PFI_AGENT_INTERVAL sets the agents' sampling interval (default 100ms), PFI_AGENT_TAU the
# emulated GPUs' power lag behind a cap change, s (default 0.05).

CLUSTER_PIDS=""
PROM_PID=""

cluster_cleanup() {
    for p in $CLUSTER_PIDS $PROM_PID; do kill "$p" 2>/dev/null || true; done
    for p in $CLUSTER_PIDS $PROM_PID; do wait "$p" 2>/dev/null || true; done
    CLUSTER_PIDS=""
    PROM_PID=""
}

# free_port — a free TCP port on loopback (bound and released; the kernel picks it).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_agent NAME TOKEN JOB... — a pfid on a port of its own choosing (listen port 0, the
# bound port read from its port file), emulated GPUs, one emulated job per JOB
# (ID:CLASS:GPUS:ALPHA:TPUT), each on its own GPUs following the wall clock and named with
# its class by a static jobs file; writes go through TOKEN (a 0600 token file). Appends
# "URL TOKEN" to $WORK/agents and sets AGENT_PID and AGENT_PORT. $PFI_AGENT_EXTRA: more
# pfid.conf lines (a node_power_file, ...).
start_agent() {
    agent_conf "$@" || return 1
    rm -f "$dir/port"
    "$PFI_AGENT_BIN" --config "$dir/pfid.conf" 2>>"$WORK/agent.$name.log" &
    AGENT_PID=$!
    CLUSTER_PIDS="$CLUSTER_PIDS $AGENT_PID"
    sa_n=0
    while [ ! -s "$dir/port" ]; do
        sa_n=$((sa_n + 1))
        if [ $sa_n -gt 200 ] || ! kill -0 "$AGENT_PID" 2>/dev/null; then
            echo "agent $name did not start:" >&2
            cat "$WORK/agent.$name.log" >&2
            return 1
        fi
        sleep 0.05
    done
    AGENT_PORT=$(cat "$dir/port")
    # the agents file holds tokens: the user's alone (pfi control warns otherwise)
    (umask 077 && echo "http://127.0.0.1:$AGENT_PORT $token" >> "$WORK/agents") &&
        chmod 600 "$WORK/agents"
}

# agent_conf NAME TOKEN JOB... — start_agent's files without starting the agent: the
# directory $WORK/agent.NAME (set as $dir) with its pfid.conf, jobs file and token file
# (bench/control.sh's in-process stand-in, bench/agent_farm, runs many from theirs).
agent_conf() {
    # (sh has no locals: the callers' loop variables k and i are left alone)
    name=$1 token=$2
    shift 2
    dir="$WORK/agent.$name"
    mkdir -p "$dir" || return 1
    seed=$(printf '%s' "$name" | cksum | cut -d' ' -f1)
    seed=$((seed % 100000 + 1))
    spec="" idx=0
    : > "$dir/jobs"
    for j in "$@"; do
        id=${j%%:*} rest=${j#*:}
        cls=${rest%%:*} rest=${rest#*:}
        g=${rest%%:*} rest=${rest#*:}
        alpha=${rest%%:*} tput=${rest#*:}
        seg="gpus=$g,alpha=$alpha,tput=$tput"
        [ -z "$spec" ] && seg="$seg,pu=650,startup=0,ckpt=0,tau=${PFI_AGENT_TAU:-0.05},report=0.2,noise=0.005,seed=$seed"
        spec="$spec${spec:+;}$seg"
        sa_n=0
        while [ $sa_n -lt "$g" ]; do
            echo "$idx $id $cls" >> "$dir/jobs"
            idx=$((idx + 1)) sa_n=$((sa_n + 1))
        done
    done
    (umask 077 && printf '%s\n' "$token" > "$dir/token")
    cat > "$dir/pfid.conf" <<CONF
listen = 127.0.0.1:0
port_file = $dir/port
hostname = $name
token_file = $dir/token
backend = emulated
emulate = $spec
interval = ${PFI_AGENT_INTERVAL:-100ms}
jobs = static
jobs_file = $dir/jobs
journal = $dir/cap-journal
lease_policy = hold
shutdown = restore
log_level = warning
${PFI_AGENT_EXTRA:-}
CONF
}

# start_prometheus — Debian's prometheus on a random loopback port with its own config and
# storage under $WORK, scraping every agent in $WORK/agents every 0.5 s ($PROM_INTERVAL,
# timeout 80 % of it); with $PROM_KEEP (a regex of metric names) it stores only those (a
# large replay: what a TSDB keeps costs most of its CPU); waits until count(up == 1)
# reaches the agent count. Sets PROM_URL. Returns 1 when not installed.
start_prometheus() {
    command -v prometheus >/dev/null 2>&1 || return 1
    port=$(free_port)
    targets=$(awk '{sub("http://", "", $1); printf "%s\"%s\"", (NR > 1 ? ", " : ""), $1}' "$WORK/agents")
    n=$(wc -l < "$WORK/agents")
    mkdir -p "$WORK/prom-data"
    iv_ms=$(python3 -c "import sys; print(round(float(sys.argv[1]) * 1000))" "${PROM_INTERVAL:-0.5}")
    cat > "$WORK/prometheus.yml" <<YML
global:
  scrape_interval: ${iv_ms}ms
  scrape_timeout: $((iv_ms * 4 / 5))ms
scrape_configs:
  - job_name: pfid
    honor_labels: true
    static_configs:
      - targets: [$targets]
YML
    if [ -n "${PROM_KEEP:-}" ]; then
        cat >> "$WORK/prometheus.yml" <<YML
    metric_relabel_configs:
      - source_labels: [__name__]
        regex: '$PROM_KEEP'
        action: keep
YML
    fi
    prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom-data" \
        --web.listen-address="127.0.0.1:$port" --log.level=warn 2>>"$WORK/prometheus.log" &
    PROM_PID=$!
    PROM_URL="http://127.0.0.1:$port"
    i=0
    while :; do
        i=$((i + 1))
        [ $i -gt 300 ] && { echo "prometheus: up never reached $n" >&2; return 2; }
        got=$(curl -sf "$PROM_URL/api/v1/query" --data-urlencode 'query=count(up == 1)' 2>/dev/null |
            python3 -c 'import json,sys
try:
    r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)
except Exception: print(0)' 2>/dev/null)
        [ "$got" = "$n" ] && break
        sleep 0.1
    done
    # the first samples are queryable a moment after up == 1: wait for power samples too
    i=0
    while :; do
        i=$((i + 1))
        [ $i -gt 100 ] && break
        got=$(curl -sf "$PROM_URL/api/v1/query" --data-urlencode 'query=count(pfi_gpu_energy_joules_total)' 2>/dev/null |
            python3 -c 'import json,sys
try:
    r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)
except Exception: print(0)' 2>/dev/null)
        [ "${got:-0}" -gt 0 ] && break
        sleep 0.1
    done
    return 0
}

# stop_prometheus
stop_prometheus() {
    [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null
    PROM_PID=""
}

# agents_restored — 0 when every GPU of every answering agent in $WORK/agents is on its
# original limit; prints the offenders otherwise. Agents listed in $WORK/dead are skipped.
agents_restored() {
    bad=0
    while read -r url tok; do
        grep -qx "$url" "$WORK/dead" 2>/dev/null && continue
        curl -sf "$url/v1/state" | python3 -c 'import json,sys
s=json.load(sys.stdin); bad=[g["uuid"] for g in s["gpus"] if abs(g["cap_w"]-g["original_cap_w"])>0.5 or abs(g["enforced_cap_w"]-g["original_cap_w"])>0.5]
bad and print("not restored:", " ".join(bad)); sys.exit(1 if bad else 0)' || bad=1
    done < "$WORK/agents"
    return $bad
}

# mixed_cluster N — N agents with mixed jobs (dense / MoE, pre-training / fine-tuning)
mixed_cluster() {
    (umask 077 && : > "$WORK/agents")
    k=1
    while [ $k -le "$1" ]; do
        case $((k % 4)) in
        1) start_agent "node$k" "tok$k" "dense-pt$k:dense:4:0.93:24000" "moe-ft$k:moe-ft:4:0.55:9000" ;;
        2) start_agent "node$k" "tok$k" "moe-pt$k:moe-pt:4:0.8:16000" "dense-ft$k:dense-ft:4:0.9:12000" ;;
        3) start_agent "node$k" "tok$k" "moe-ft$k:moe-ft:8:0.5:10000" ;;
        0) start_agent "node$k" "tok$k" "dense-pt$k:dense:8:0.95:30000" ;;
        esac
        k=$((k + 1))
    done
}
