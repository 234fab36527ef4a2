#!/bin/sh
# device-check.sh — READ-ONLY check of pfi's nvml backend on a machine with an NVIDIA GPU.
#
# What it does:
#   1. builds pfi (no tests) into build-device/;
#   2. runs `pfi probe --backend nvml` (GPUs, power limits, readable metrics);
#   3. runs two PyTorch workloads on one GPU — compute-bound (bf16 matmuls) and memory-bound
#      (large tensor copies) — and records telemetry while each runs with
#      `pfi probe --record` (read-only sampling through NVML, GPM on Hopper);
#   4. checks that the memory-bound workload reads higher DRAM activity and lower tensor
#      activity than the compute-bound one.
#
# What it never does: set a power cap, application or locked clocks, persistence mode, MIG
# mode, compute mode, ECC, or anything else. The only pfi verbs it runs are `probe` (which has
# no code path that writes to a GPU) and `--help`; it never runs `pfi sweep --backend nvml`
# or `pfi restore`, nor nvidia-smi with any setting option.
#
# Usage: scripts/device-check.sh [GPU_INDEX] [SECONDS_PER_WORKLOAD]
# Output: a summary on stdout, the recordings under ${OUT:-device-check-out}/.
set -eu
cd "$(dirname "$0")/.."
GPU=${1:-0}
SECS=${2:-20}
OUTDIR=${OUT:-device-check-out}
mkdir -p "$OUTDIR"
log() { printf '%s\n' "device-check: $*"; }

log "building pfi (build-device/)"
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPFI_TESTS=OFF >"$OUTDIR/cmake.log" 2>&1 ||
    { log "cmake failed, see $OUTDIR/cmake.log"; tail -20 "$OUTDIR/cmake.log"; exit 1; }
cmake --build build-device -j "$(nproc 2>/dev/null || echo 4)" --target pfi_cli >"$OUTDIR/build.log" 2>&1 ||
    { log "build failed, see $OUTDIR/build.log"; tail -20 "$OUTDIR/build.log"; exit 1; }
PFI=./build-device/pfi

log "nvidia-smi (read-only query)"
nvidia-smi --query-gpu=index,name,uuid,power.limit,enforced.power.limit,power.min_limit,power.max_limit,clocks.sm,clocks.mem --format=csv \
    >"$OUTDIR/nvidia-smi.csv" 2>&1 || true
cat "$OUTDIR/nvidia-smi.csv" || true

log "pfi probe --backend nvml"
$PFI probe --backend nvml | tee "$OUTDIR/probe.txt"
$PFI probe --backend nvml --format json >"$OUTDIR/probe.json"

cat >"$OUTDIR/workload.py" <<'PY'
# compute: back-to-back bf16 matmuls (tensor cores, little DRAM traffic per flop)
# memory: copies between two 4 GiB buffers (DRAM bandwidth, no tensor cores)
import sys, time, torch
kind, secs, dev = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
torch.cuda.set_device(dev)
end = time.time() + secs
if kind == "compute":
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    while time.time() < end:
        for _ in range(20):
            c = a @ b
        torch.cuda.synchronize()
else:
    n = 1 << 30  # 1 Gi float32 = 4 GiB
    x = torch.empty(n, device="cuda", dtype=torch.float32).fill_(1.0)
    y = torch.empty_like(x)
    while time.time() < end:
        for _ in range(10):
            y.copy_(x)
            x.copy_(y)
        torch.cuda.synchronize()
print(kind, "done")
PY

run() { # run KIND
    log "workload $1 on GPU $GPU for ${SECS}s, recording telemetry"
    CUDA_DEVICE_ORDER=PCI_BUS_ID python3 "$OUTDIR/workload.py" "$1" "$SECS" "$GPU" >"$OUTDIR/$1.log" 2>&1 &
    wp=$!
    sleep 4 # let it reach steady state
    $PFI probe --backend nvml --record "$OUTDIR/$1.csv" --duration "$((SECS - 6))s" --interval 500ms >/dev/null
    wait $wp || { log "workload $1 failed:"; cat "$OUTDIR/$1.log"; exit 1; }
}
run compute
run memory

# mean of a column over the GPU's rows (empty cells are missing, not zero)
mean() { # mean FILE COLUMN
    awk -F, -v col="$2" -v gpu="$GPU" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
        $2 == gpu && c && $c != "" { s += $c; n++ }
        END { if (n) printf "%.4f", s / n; else printf "NA" }' "$1"
}
echo
printf '%-9s %10s %10s %10s %10s %10s\n' workload power_w sm_mhz dram_act tensor_act mem_util
for k in compute memory; do
    printf '%-9s %10s %10s %10s %10s %10s\n' "$k" "$(mean "$OUTDIR/$k.csv" power_w)" \
        "$(mean "$OUTDIR/$k.csv" sm_clock_mhz)" "$(mean "$OUTDIR/$k.csv" dram_active)" \
        "$(mean "$OUTDIR/$k.csv" tensor_active)" "$(mean "$OUTDIR/$k.csv" mem_util)"
done
cd_=$(mean "$OUTDIR/compute.csv" dram_active); md=$(mean "$OUTDIR/memory.csv" dram_active)
ct=$(mean "$OUTDIR/compute.csv" tensor_active); mt=$(mean "$OUTDIR/memory.csv" tensor_active)
status=0
if [ "$cd_" = NA ] || [ "$md" = NA ]; then
    log "GPM DRAM activity not available here; comparing NVML memory utilisation instead"
    cd_=$(mean "$OUTDIR/compute.csv" mem_util); md=$(mean "$OUTDIR/memory.csv" mem_util)
fi
if awk -v a="$md" -v b="$cd_" 'BEGIN { exit !(a != "NA" && b != "NA" && a > b) }'; then
    log "PASS memory-bound reads higher DRAM activity ($md > $cd_)"
else
    log "FAIL memory-bound DRAM activity $md not above compute-bound $cd_"; status=1
fi
if [ "$ct" = NA ] || [ "$mt" = NA ]; then
    log "SKIP tensor activity not available (no GPM on this GPU/driver)"
elif awk -v a="$mt" -v b="$ct" 'BEGIN { exit !(a < b) }'; then
    log "PASS memory-bound reads lower tensor activity ($mt < $ct)"
else
    log "FAIL memory-bound tensor activity $mt not below compute-bound $ct"; status=1
fi
# the limits must be exactly as they were: this script changes nothing
nvidia-smi --query-gpu=index,power.limit,enforced.power.limit --format=csv >"$OUTDIR/limits-after.csv" 2>&1 || true
log "power limits after the check (must equal the ones above):"
cat "$OUTDIR/limits-after.csv" || true
log "recordings: $OUTDIR/compute.csv $OUTDIR/memory.csv (replay with: pfi probe --backend replay --replay FILE)"
exit $status
