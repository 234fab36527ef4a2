#!/bin/sh
# device-check-pfid.sh — READ-ONLY check of pfid on a machine with an NVIDIA GPU (real NVML).
#
# Builds pfid, runs it on the nvml backend on loopback with jobs = slurm, starts a small
# PyTorch process with SLURM_JOB_ID=device-check on GPU 0, and checks: /metrics passes the
# structure check (and promtool when installed) with power, energy and limits present;
# /v1/state maps GPU 0 to the job through NVML's running-process list (the
# nvmlProcessInfo_t layout of the real driver); a write without the token gets 401 and a cap
# below the device's minimum gets 422 — neither touches the GPU. It never sends a valid
# PUT or a DELETE: no power limit, clock or mode is changed. pfid's journal lives under $OUT.
# Needs pfi's build dependencies (scripts/deps.sh: libmicrohttpd, GSL, PLplot, ...) on the
# machine, which the stock device image lacks; not yet run on a real GPU.
# Usage: scripts/device-check-pfid.sh   (output under ${OUT:-device-check-out}/)
set -u
cd "$(dirname "$0")/.."
OUTDIR=${OUT:-device-check-out}
mkdir -p "$OUTDIR"
log() { printf 'device-check-pfid: %s\n' "$*"; }
PIDS=""
trap 'for p in $PIDS; do kill -TERM $p 2>/dev/null; done' EXIT
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPFI_TESTS=OFF >"$OUTDIR/cmake.log" 2>&1 &&
    cmake --build build-device -j "$(nproc)" --target pfid >"$OUTDIR/build.log" 2>&1 ||
    { log "build failed"; tail -20 "$OUTDIR/build.log" "$OUTDIR/cmake.log"; exit 1; }
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$OUTDIR/token"
chmod 600 "$OUTDIR/token"
SLURM_JOB_ID=device-check python3 -c 'import time, torch; x = torch.ones(1 << 20, device="cuda:0"); time.sleep(40)' &
PIDS="$PIDS $!"
sleep 8
./build-device/pfid -b nvml -l 127.0.0.1:0 -s port_file="$OUTDIR/port" -t "$OUTDIR/token" \
    -j "$OUTDIR/journal" -s jobs=slurm -s jobs_refresh=1s -v 2>"$OUTDIR/pfid.log" &
PIDS="$PIDS $!"
sleep 4
P=$(cat "$OUTDIR/port") || { log "pfid did not start"; cat "$OUTDIR/pfid.log"; exit 1; }
curl -s "http://127.0.0.1:$P/metrics" >"$OUTDIR/metrics.txt"
curl -s "http://127.0.0.1:$P/v1/state" >"$OUTDIR/state.json"
python3 tests/agent/check_metrics.py "$OUTDIR/metrics.txt" && log "metrics structure ok"
command -v promtool >/dev/null && promtool check metrics <"$OUTDIR/metrics.txt"
grep -E '^pfi_gpu_(power_watts|energy_joules_total|power_cap_watts|power_cap_min_watts|dram_active_ratio|job_info)\{gpu="0"' "$OUTDIR/metrics.txt"
python3 -c 'import json; d = json.load(open("'"$OUTDIR"'/state.json")); g = d["gpus"][0]; print("GPU 0:", g["uuid"], "job", g["job"], "power", g["power_w"], "range", g["min_cap_w"], g["max_cap_w"])'
U=$(python3 -c 'import json; print(json.load(open("'"$OUTDIR"'/state.json"))["gpus"][0]["uuid"])')
curl -s -w ' %{http_code}\n' -X PUT "http://127.0.0.1:$P/v1/caps" \
    -d '{"request_id": "no-token", "lease_s": 5, "caps": [{"uuid": "'"$U"'", "cap_w": 1}]}'
curl -s -w ' %{http_code}\n' -X PUT -H "Authorization: Bearer $(cat "$OUTDIR/token")" "http://127.0.0.1:$P/v1/caps" \
    -d '{"request_id": "below-min", "lease_s": 5, "caps": [{"uuid": "'"$U"'", "cap_w": 1}]}'
[ ! -e "$OUTDIR/journal" ] && log "no journal written: nothing was changed"
