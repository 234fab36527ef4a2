#!/bin/sh
# bench/ingest — generate a ~1 GB `dcgmi dmon` file and a ~1 GB nvidia-smi CSV under /tmp
# (bench/gen_telemetry.py; kept between runs), parse each with pfi (one core, streaming,
# bench/ingest_bench) and with pandas (/usr/bin/python3, Debian's python3-pandas), REPEAT
# times each, alternating, and print the medians: MB/s of each side, the ratio, pfi's peak
# resident memory; and the best CPU figure of each side (the least disturbed run on a shared
# machine). Not a test. Usage: bench/ingest.sh [BUILD_DIR [SIZE_MB [REPEAT]]]
set -eu
BUILD=${1:-build}
MB=${2:-1024}
REPEAT=${3:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${TMPDIR:-/tmp}/pfi-bench-$MB
/usr/bin/python3 "$HERE/gen_telemetry.py" "$DIR" "$MB"
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "bench/ingest: $MB MB inputs in $DIR, $REPEAT runs per side, cores: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg)"
for f in dcgmi-dmon:dcgmi.txt nvidia-smi-csv:smi.csv; do
    fmt=${f%%:*}; file=$DIR/${f#*:}
    : >"$DIR/pfi.txt"; : >"$DIR/pd.txt"
    i=0
    while [ "$i" -lt "$REPEAT" ]; do
        # Each timed run reads the file from the page cache: pandas' gigabytes of frames
        # can push it out, and the next run would time the disk instead of the parser.
        cat "$file" >/dev/null
        "$BUILD/bench/ingest_bench" "$fmt" "$file" | tee -a "$DIR/pfi.txt" >&2
        cat "$file" >/dev/null
        /usr/bin/python3 - "$fmt" "$file" >>"$DIR/pd.txt" <<'PY'
import os, sys, time
import pandas as pd
fmt, path = sys.argv[1], sys.argv[2]
t, c = time.monotonic(), time.process_time()
if fmt == "dcgmi-dmon":
    df = pd.read_csv(path, sep=r"\s+", skiprows=2, header=None, engine="c",
                     names=["ent", "id", "POWER", "TOTEC", "TMPTR", "SMACT", "DRAMA"],
                     na_values=["N/A", "N/W"])
    s = df[["POWER", "TOTEC", "TMPTR", "SMACT", "DRAMA"]].sum().sum()
else:
    df = pd.read_csv(path, sep=",", engine="c", skipinitialspace=True,
                     na_values=["[N/A]", "[Not Supported]"])
    s = (df["power.draw [W]"].str.rstrip(" W").astype(float).sum()
         + df["power.limit [W]"].str.rstrip(" W").astype(float).sum()
         + df["utilization.gpu [%]"].str.rstrip(" %").astype(float).sum()
         + df["temperature.gpu"].sum())
wall, cpu = time.monotonic() - t, time.process_time() - c
mb = os.path.getsize(path) / 1e6
print("%.1f %.1f" % (mb / wall, mb / cpu))
print("pandas %s: %d rows (sum %.6g), wall %.3f s = %.1f MB/s, cpu %.3f s = %.1f MB/s"
      % (fmt, len(df), s, wall, mb / wall, cpu, mb / cpu), file=sys.stderr)
PY
        i=$((i + 1))
    done
    pw=$(sed 's/.*= \([0-9.]*\) MB\/s, cpu.*/\1/' "$DIR/pfi.txt" | median)
    pc=$(sed 's/.*cpu [0-9.]* s = \([0-9.]*\) MB\/s.*/\1/' "$DIR/pfi.txt" | median)
    pb=$(sed 's/.*cpu [0-9.]* s = \([0-9.]*\) MB\/s.*/\1/' "$DIR/pfi.txt" | sort -g | tail -1)
    rss=$(sed 's/.*maxrss \([0-9]*\) KiB.*/\1/' "$DIR/pfi.txt" | sort -n | tail -1)
    dw=$(cut -d' ' -f1 "$DIR/pd.txt" | median)
    dc=$(cut -d' ' -f2 "$DIR/pd.txt" | median)
    db=$(cut -d' ' -f2 "$DIR/pd.txt" | sort -g | tail -1)
    printf '%-15s pfi %8.1f MB/s wall %8.1f MB/s cpu (best %.1f) | pandas %7.1f MB/s wall %7.1f MB/s cpu (best %.1f) | ratio %5.1fx wall %5.1fx cpu %5.1fx best | pfi max RSS %s KiB\n' \
        "$fmt" "$pw" "$pc" "$pb" "$dw" "$dc" "$db" "$(echo "$pw $dw" | awk '{print $1 / $2}')" \
        "$(echo "$pc $dc" | awk '{print $1 / $2}')" "$(echo "$pb $db" | awk '{print $1 / $2}')" "$rss"
done
