#!/bin/sh
# bench/ingest — `pfi ingest` as users run it, side by side with pandas doing the same job.
#
# For each size (MB, 10^6 bytes) a `dcgmi dmon` file and an nvidia-smi CSV are generated
# under /tmp (bench/gen_telemetry.py; kept between runs, never committed). Each file is run
# REPEAT times by each of, alternating:
#   dry-run  pfi ingest --dry-run --telemetry FILE          (the whole report, nothing stored)
#   store    pfi ingest --db D --group G --cap 300 --telemetry FILE   (the run stored)
#   reader   BUILD/bench/ingest_bench FORMAT FILE           (the reader alone, counting mode:
#            what the two above cost beyond parsing)
#   pandas   /usr/bin/python3: read_csv (C engine), the job power per capture loop (sum over
#            GPUs), its top-10 % steady-state mean, the energy by trapezoids per GPU and the
#            mean of every field: what pfi ingest computes
# each under /usr/bin/time (GNU time): wall and CPU (user + system) seconds of the process,
# start-up included, and its peak resident memory. Printed per (format, size): median MB/s
# of CPU time and of wall time, the ratio to pandas (CPU), median peak RSS. On a shared
# machine the CPU figures are the like-for-like ones (wall time includes waiting for a
# core). Not a test.
# Last, per format, the peak RSS of both pfi paths at each size: bounded memory means it does
# not grow with the file (pfi ingest streams regular files: bench/README.md).
# Usage: bench/ingest.sh [BUILD_DIR [SIZES_MB [REPEAT]]]   (defaults: build "100 1024" 3)
set -eu
BUILD=${1:-build}
SIZES=${2:-100 1024}
REPEAT=${3:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
PFI=$BUILD/pfi
[ -x "$PFI" ] || { echo "bench/ingest: no $PFI (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench/ingest: needs GNU time (/usr/bin/time)" >&2; exit 2; }
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
PANDAS=$(mktemp)
WORK=$(mktemp -d)
trap 'rm -rf "$PANDAS" "$WORK"' EXIT
cat >"$PANDAS" <<'PY'
import sys
import numpy as np
import pandas as pd
fmt, path = sys.argv[1], sys.argv[2]
Q = 0.10
if fmt == "dcgmi-dmon":
    df = pd.read_csv(path, sep=r"\s+", skiprows=2, header=None, engine="c",
                     names=["ent", "gpu", "power", "energy", "temp", "smact", "drama"],
                     na_values=["N/A", "N/W"])
    df["loop"] = df.groupby("gpu").cumcount()  # nominal time: the n-th row of each GPU
    dt = 1.0
    fields = ["power", "temp", "smact", "drama"]
else:
    df = pd.read_csv(path, sep=",", engine="c", skipinitialspace=True,
                     na_values=["[N/A]", "[Not Supported]"])
    df.columns = ["ts", "gpu", "power", "limit", "util", "temp"]
    for c in ("power", "limit", "util"):
        df[c] = df[c].str.split(" ", n=1).str[0].astype(float)
    df["loop"] = pd.to_datetime(df["ts"], format="%Y/%m/%d %H:%M:%S.%f")
    dt = None
    fields = ["power", "limit", "util", "temp"]
job = df.groupby("loop", sort=False)["power"].agg(["sum", "count"])
job = job[job["count"] == df["gpu"].nunique()]["sum"]
m = max(1, int(np.ceil(Q * len(job) - 1e-12)))
steady = job.nlargest(m).mean()
energy = 0.0
for _, g in df.groupby("gpu"):
    p = g["power"].to_numpy()
    t = (np.arange(len(p)) * dt if dt else
         (g["loop"].astype("int64").to_numpy() - g["loop"].iloc[0].value) / 1e9)
    energy += float(np.sum((p[1:] + p[:-1]) / 2 * np.diff(t)))
means = df.groupby("gpu")[fields].mean().mean()
print("pandas %s: %d rows, job power %.4f W (top %d of %d), energy %.3f J, %s"
      % (fmt, len(df), steady, m, len(job), energy,
         " ".join("%s %.4g" % kv for kv in means.items())), file=sys.stderr)
PY
# timed LABEL CMD...: one run under GNU time; appends "cpu_s wall_s rss_kib" to WORK/LABEL.
timed() {
    label=$1
    shift
    /usr/bin/time -o "$WORK/t" -f "%U %S %e %M" "$@" >/dev/null 2>"$WORK/err" || {
        echo "bench/ingest: $label failed:" >&2
        cat "$WORK/err" >&2
        exit 1
    }
    awk '{print $1 + $2, $3, $4}' "$WORK/t" >>"$WORK/$label"
}
echo "bench/ingest: sizes $SIZES MB, $REPEAT runs each, cores: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-15s %7s | %-36s | %-36s | %-22s | %-30s\n' input MB "pfi ingest --dry-run: MB/s cpu/wall" \
    "pfi ingest (store): MB/s cpu/wall" "reader alone: MB/s cpu" "pandas: MB/s cpu/wall, RSS"
for size in $SIZES; do
    dir=${TMPDIR:-/tmp}/pfi-bench-$size
    /usr/bin/python3 "$HERE/gen_telemetry.py" "$dir" "$size"
    for f in dcgmi-dmon:dcgmi.txt nvidia-smi-csv:smi.csv; do
        fmt=${f%%:*}
        file=$dir/${f#*:}
        mb=$(stat -c %s "$file" | awk '{print $1 / 1e6}')
        rm -f "$WORK/dry" "$WORK/store" "$WORK/reader" "$WORK/pandas"
        i=0
        while [ "$i" -lt "$REPEAT" ]; do
            # Each timed run reads the file from the page cache: pandas' frames can push it
            # out, and the next run would time the disk instead of the program.
            cat "$file" >/dev/null
            timed dry "$PFI" ingest --dry-run --telemetry "$file"
            rm -f "$WORK/b.db"
            timed store "$PFI" ingest --db "$WORK/b.db" --group bench --cap 300 --telemetry "$file"
            timed reader "$BUILD/bench/ingest_bench" "$fmt" "$file"
            cat "$file" >/dev/null
            timed pandas /usr/bin/python3 "$PANDAS" "$fmt" "$file"
            i=$((i + 1))
        done
        # stat LABEL: "cpu_MB/s wall_MB/s rss_MiB" medians
        stat_of() {
            c=$(cut -d' ' -f1 "$WORK/$1" | median)
            w=$(cut -d' ' -f2 "$WORK/$1" | median)
            r=$(cut -d' ' -f3 "$WORK/$1" | median)
            echo "$mb $c $w $r" | awk '{printf "%.0f %.0f %.1f", $1 / $2, $1 / $3, $4 / 1024}'
        }
        # shellcheck disable=SC2046 # three words each, split on purpose
        set -- $(stat_of dry) $(stat_of store) $(stat_of reader) $(stat_of pandas)
        printf '%-15s %7.0f | %5s / %5s (%5.1fx) RSS %6s MiB | %5s / %5s (%5.1fx) RSS %6s MiB | %5s RSS %6s MiB | %5s / %5s, RSS %7s MiB\n' \
            "$fmt" "$mb" "$1" "$2" "$(echo "$1 ${10}" | awk '{print $1 / $2}')" "$3" \
            "$4" "$5" "$(echo "$4 ${10}" | awk '{print $1 / $2}')" "$6" "$7" "$9" "${10}" "${11}" "${12}"
        echo "$fmt $mb $3 $6" >>"$WORK/rss"
    done
done
# Peak RSS against the input size, per format: "100 MB: a / b MiB -> 1024 MB: c / d MiB".
for fmt in dcgmi-dmon nvidia-smi-csv; do
    awk -v f="$fmt" '$1 == f {printf "%s%s %.0f MB: %s / %s MiB", (n++ ? " ->" : f ", peak RSS dry-run / store:"), "", $2, $3, $4} END {if (n) print ""}' "$WORK/rss"
done
