#!/bin/sh
# bench/ingest — generate a ~1 GB `dcgmi dmon` file and a ~1 GB nvidia-smi CSV under /tmp,
# parse each with pfi (one core, streaming) and with pandas (/usr/bin/python3), print MB/s
# and the ratio. Not a test. Usage: bench/ingest.sh BUILD_DIR [SIZE_MB]
set -eu
BUILD=${1:-build}
MB=${2:-1024}
DIR=${TMPDIR:-/tmp}/pfi-bench
mkdir -p "$DIR"
/usr/bin/python3 - "$DIR" "$MB" <<'PY'
import os, sys
d, mb = sys.argv[1], int(sys.argv[2])
target = mb * 1000 * 1000
def gen(path, header, row):
    if os.path.exists(path) and os.path.getsize(path) >= target:
        return
    with open(path, "w") as f:
        f.write(header)
        block = "".join(row(i) for i in range(20000))
        n = 0
        while n < target:
            f.write(block); n += len(block)
gen(d + "/dcgmi.txt", "#Entity    POWER        TOTEC                TMPTR        SMACT\nID\n",
    lambda i: "GPU %d      %.3f      %d           %d           %.3f\n" % (i % 8, 250 + (i * 7) % 450 + 0.125, 9876543210 + i * 300000, 40 + i % 40, (i % 1000) / 1000))
gen(d + "/smi.csv", "timestamp, index, power.draw [W], power.limit [W], utilization.gpu [%], temperature.gpu\n",
    lambda i: "2025/05/14 09:%02d:%02d.%03d, %d, %.2f W, 700.00 W, %d %%, %d\n" % (i // 3600 % 60, i // 60 % 60, i % 1000, i % 8, 200 + (i * 7) % 450 + 0.25, i % 101, 40 + i % 40))
PY
for f in dcgmi-dmon:dcgmi.txt nvidia-smi-csv:smi.csv; do
    fmt=${f%%:*}; file=$DIR/${f#*:}
    out=$("$BUILD/bench/ingest_bench" "$fmt" "$file")
    echo "$out"
    pfi_mbs=$(echo "$out" | sed 's/.*: \([0-9.]*\) MB\/s.*/\1/')
    pd_mbs=$(/usr/bin/python3 - "$fmt" "$file" <<'PY'
import os, sys, time
import pandas as pd
fmt, path = sys.argv[1], sys.argv[2]
t = time.monotonic()
if fmt == "dcgmi-dmon":
    df = pd.read_csv(path, sep=r"\s+", skiprows=2, header=None, engine="c",
                     names=["ent", "id", "POWER", "TOTEC", "TMPTR", "SMACT"], na_values=["N/A", "N/W"])
    s = df["POWER"].sum()
else:
    df = pd.read_csv(path, sep=", ", engine="python" if False else "c", skipinitialspace=True,
                     na_values=["[N/A]", "[Not Supported]"])
    s = df["power.draw [W]"].str.rstrip(" W").astype(float).sum()
dt = time.monotonic() - t
print("%.1f" % (os.path.getsize(path) / dt / 1e6))
print("pandas %s: %d rows in %.3f s (power sum %.6g)" % (fmt, len(df), dt, s), file=sys.stderr)
PY
)
    echo "pandas $fmt: $pd_mbs MB/s; ratio pfi/pandas = $(echo "$pfi_mbs $pd_mbs" | awk '{printf "%.1f", $1 / $2}')x"
done
