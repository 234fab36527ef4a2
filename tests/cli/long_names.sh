#!/bin/sh
# Tables with long names (review: columns shifted by a long job or group name, or the name cut
# at 20-32 characters): pfi runs, pfi predict --groups, pfi allocate's jobs and --topology
# levels, pfi sweep's summary keep every name whole and every right-aligned column under its
# header.
# usage: long_names.sh PFI SOURCE_DIR
set -u
PFI=$1
SRC=$2
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
LONG=a-very-long-name-for-the-alignment-check-of-every-table

# aligned NAME FILE HEADER_START COLUMN... — the table whose header line starts with
# HEADER_START: LONG in a row whole, and every row has a cell ending where each COLUMN's
# header ends (at least $MINROWS rows, 2 unless given)
aligned() {
    name=$1 file=$2 start=$3
    shift 3
    if python3 - "$file" "$start" "$LONG" "$@" <<'PY'; then echo "ok   $name"; else echo "FAIL $name"; cat "$file"; fail=1; fi
import os, re, sys
lines = open(sys.argv[1]).read().splitlines()
start, long_name, cols = sys.argv[2], sys.argv[3], sys.argv[4:]
i = next(k for k, l in enumerate(lines) if l.startswith(start))
head, rows = lines[i], []
for l in lines[i + 1:]:
    if not l.strip():
        break
    rows.append(l)
want = [head.index(c) + len(c) for c in cols]
ok = len(rows) >= int(os.environ.get("MINROWS", "2")) and any(re.search(r"(^|\s)%s(\s|$)" % re.escape(long_name), r) for r in rows)
for r in rows:
    ends = {m.end() for m in re.finditer(r"\S+", r)}
    ok &= all(e in ends for e in want)
sys.exit(0 if ok else 1)
PY
}

"$PFI" ingest -q --db "$T/s.db" --group "$LONG" --cap 300 --telemetry "$SRC/examples/smi.csv" > /dev/null 2>&1 &&
    "$PFI" ingest -q --db "$T/s.db" --group short --cap 250 --telemetry "$SRC/examples/smi.csv" > /dev/null 2>&1 ||
    { echo "FAIL setup: pfi ingest"; exit 1; }
"$PFI" runs --db "$T/s.db" > "$T/runs.out"
aligned runs "$T/runs.out" "group " gpus cap_w power_w power_se throughput tput_se flags

(cd "$T" && "$PFI" library generate lib > /dev/null && "$PFI" fit lib -m model.json > /dev/null 2>&1) ||
    { echo "FAIL setup: pfi library generate / fit"; exit 1; }
printf 'group,pfi,dcgm_dram_active,dcgm_mem_copy_util\nshort,1.2,0.3,0.4\n%s,1.5,0.2,0.5\n' "$LONG" > "$T/g.csv"
"$PFI" predict -m "$T/model.json" --groups "$T/g.csv" > "$T/predict.out" 2> /dev/null
aligned predict-groups "$T/predict.out" "  group " "PFI est" measured

printf 'job,class,cap_w,power_w,tput_tok_s,node\nshort,dense,200,1600,100,r1\nshort,dense,400,3200,150,r1\n%s,dense,200,1600,100,r1\n%s,dense,400,3200,150,r1\n' "$LONG" "$LONG" > "$T/jobs.csv"
printf 'feed %s - 20000\nrack r1 %s 4000\n' "$LONG" "$LONG" > "$T/topo.txt"
"$PFI" allocate --budget-w 5000 --topology "$T/topo.txt" "$T/jobs.csv" > "$T/alloc.out" 2> /dev/null
aligned allocate-levels "$T/alloc.out" "level " limit_w caps_sum_w drawn_w
aligned allocate-jobs "$T/alloc.out" "job " gpus cap_w power_w shed_w tput_tok_s kept

# (a sweep's summary has its own group's row only)
"$PFI" sweep --backend emulated --emulate gpus=2,noise=0.01 --caps 300,250,200 --duration 2m \
    --interval 5s --db "$T/sw.db" --group "$LONG" > "$T/sweep.out" 2> /dev/null
MINROWS=1 aligned sweep "$T/sweep.out" "group " runs PFI area ce
exit $fail
