#!/bin/sh
# pfi ingest on files that are not telemetry (or not the format --format names): "format
# not recognised" with what was seen, exit 1, never a reader's notes on every line followed
# by advice about a tool the file did not come from.
# Usage: detect.sh PFI_BINARY
set -u
PFI=$1
fail=0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
ingest() { "$PFI" ingest --db "$T/s.db" --group g --cap 300 --dry-run "$@"; }
no_out() { # no_out NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "FAIL $1: '$2' in $3"; cat "$3"; fail=1; else echo "ok   $1"; fi
}

# Random bytes whose first line has a '{' and no ',' (once read as a Prometheus scrape).
python3 -c '
import random, sys
random.seed(7)
b = bytearray(random.getrandbits(8) for _ in range(4000))
head = bytes(c for c in b[:200] if c not in b"\n,")[:60]
sys.stdout.buffer.write(b"a{" + head + b"\n" + bytes(b[200:]))' >"$T/random.bin"
check random-bytes 1 ingest --telemetry "$T/random.bin"
grep_out random-not-text "random.bin: telemetry format not recognised: not a text file" "$T/err"
grep_out random-what-seen "bytes are not text" "$T/err"
no_out random-no-prom "Prometheus\|DCGM_FI_DEV_POWER_USAGE" "$T/err"

# An ELF binary (this program) whose first line happens to hold a comma, or not.
check elf 1 ingest --telemetry "$PFI"
grep_out elf-not-text "format not recognised: not a text file: starts with '\\\\x7FELF" "$T/err"
no_out elf-no-csv-advice "CSV has no header" "$T/err"

# UTF-16 (PowerShell's redirect): said so, with the conversion.
printf '\377\376t\000i\000m\000e\000,\000\n\000' >"$T/utf16.csv"
check utf16 1 ingest --telemetry "$T/utf16.csv"
grep_out utf16-said "UTF-16 text" "$T/err"

# A Markdown file: its '#' heading is not a dmon header (once read as dmon, a note per line
# and the dcgmi profiling advice).
printf '# Notes\n\nSome *markdown* text, with a comma.\n## More\n- a list\n' >"$T/notes.md"
check markdown 1 ingest --telemetry "$T/notes.md"
grep_out markdown-said "notes.md: telemetry format not recognised: a first line '# Notes' that starts with '#' but is not an nvidia-smi dmon header" "$T/err"
no_out markdown-no-tool "the tool reported\|DCGM_FI_PROF" "$T/err"
# A real dmon header in any of its layouts is still dmon.
printf '#Date       Time        gpu    pwr\n#YYYYMMDD   HH:MM:SS    Idx      W\n20250514   10:00:00      0    250\n20250514   10:00:01      0    251\n' >"$T/dt.txt"
check dmon-dt 0 ingest --telemetry "$T/dt.txt"

# A runs table: a CSV with a header that names no nvidia-smi query field.
{ echo "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power"
  i=0; while [ $i -lt 600 ]; do echo "cifar100,shufflenetv2,1024,adadelta,$((100 + i % 8 * 25)),27.13,106.9"; i=$((i + 1)); done
} >"$T/runs.csv"
check runs-table 1 ingest --telemetry "$T/runs.csv"
grep_out runs-table-why "runs.csv: telemetry format not recognised: a CSV whose header (dataset, network, batch_size, optimizer, power_limit, time_per_epoch, average_power) names no nvidia-smi query field" "$T/err"
grep_out runs-table-hint "pass --format .*--fields" "$T/err"
no_out runs-table-no-cells "not a number\|notes not shown\|no power samples" "$T/err"

# JSON: a '{' on the first line is not enough for Prometheus.
printf '{\n  "gpu": 0,\n  "power": 300\n}\n' >"$T/x.json"
check json 1 ingest --telemetry "$T/x.json"
grep_out json-why "format not recognised: JSON (first line '{')" "$T/err"
printf '{"gpu": 0, "power": 250.5}\n{"gpu": 1, "power": 251}\n' >"$T/lines.json"
check json-lines 1 ingest --telemetry "$T/lines.json"
grep_out json-lines-why "format not recognised: JSON" "$T/err"
no_out json-lines-no-csv "CSV has no header" "$T/err"
# A foreign table whose header has capitals and '#' (not nvidia-smi's header cells): refused
# with its names, not asked for --fields.
printf 'table_section,Model,# GPUs,Throughput (T/s)\n"H100, large",70b,512,515636\n' >"$T/tables.csv"
check foreign-caps 1 ingest --telemetry "$T/tables.csv"
grep_out foreign-caps-why "a CSV whose header (table_section, Model, # GPUs" "$T/err"
no_out foreign-caps-no-fields "CSV has no header" "$T/err"

# A log given as telemetry (case-03's dmesg excerpt: its first line has a comma and starts
# with '[', once read as a headerless CSV and asked for --fields): refused as no telemetry
# format, the formats named; a syslog line, and a line of prose before a CSV, alike.
{ echo '[ 8123.441915] NVRM: Xid (PCI:0000:3d:00): 79, GPU has fallen off the bus.'
  echo '[ 8123.452100] NVRM: The NVIDIA GPU 0000:3d:00.0'; } >"$T/dmesg.txt"
check dmesg 1 ingest --telemetry "$T/dmesg.txt"
grep_out dmesg-why "dmesg.txt: telemetry format not recognised: a log (first line '\[ 8123.441915\] NVRM: Xid" "$T/err"
grep_out dmesg-formats "expected nvidia-smi --query-gpu CSV, nvidia-smi dmon, nvidia-smi -q (text or XML), dcgmi dmon, a Prometheus scrape or a Prometheus API answer (a kernel log goes to --kernel-log)" "$T/err"
no_out dmesg-no-csv "CSV has no header" "$T/err"
printf 'Dec  6 22:17:42 node3 kernel: NVRM: Xid (PCI:0000:3d:00): 79, pid=1, GPU fell off\n' >"$T/syslog.txt"
check syslog 1 ingest --telemetry "$T/syslog.txt"
grep_out syslog-why "syslog.txt: telemetry format not recognised: a log (first line 'Dec  6 22:17:42" "$T/err"
printf 'power readings of node 3\n0, 300.5, 400\n' >"$T/prose.txt"
check prose 1 ingest --telemetry "$T/prose.txt"
grep_out prose-why "prose.txt: telemetry format not recognised (first line: 'power readings of node 3'); pass --format (nvidia-smi-csv, dmon" "$T/err"
no_out prose-no-csv "CSV has no header" "$T/err"

# Still detected: a dcgm-exporter scrape with a damaged line, a generic metric whose labels
# hold commas, a headerless nvidia-smi CSV (the reader asks for --fields).
{ echo '# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).'; echo '# TYPE DCGM_FI_DEV_POWER_USAGE gauge'
  echo 'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1"} 300.5'; echo 'garbage line'
  echo 'DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-2"} 290'; } >"$T/scrape.prom"
check prom-damaged 0 ingest --telemetry "$T/scrape.prom"
grep_out prom-damaged-format "format prometheus" "$T/out"
{ echo 'node_gpu_power_watts{gpu="0",host="a"} 300'; echo 'DCGM_FI_DEV_POWER_USAGE{gpu="0"} 300'; } >"$T/generic.prom"
check prom-generic 0 ingest --telemetry "$T/generic.prom"
grep_out prom-generic-format "format prometheus" "$T/out"
printf '2024/01/01 00:00:00.000, 0, 300.5 W\n' >"$T/noheader.csv"
check csv-noheader 1 ingest --telemetry "$T/noheader.csv"
grep_out csv-noheader-fields "CSV has no header; pass the --query-gpu field list (--fields)" "$T/err"

# More notes than are kept: one line with the total, not one per print.
{ echo "timestamp, index, power.draw [W]"
  i=0; while [ $i -lt 600 ]; do printf '2024/01/01 00:%02d:%02d.000, 0, bad W\n' $((i / 60)) $((i % 60)); i=$((i + 1)); done
} >"$T/badcells.csv"
check notes-dropped 1 ingest --telemetry "$T/badcells.csv"
[ "$(grep -c 'more notes\? not shown' "$T/err")" -eq 1 ] && echo "ok   notes-dropped-once" \
    || { echo "FAIL notes-dropped-once: $(grep 'not shown' "$T/err")"; fail=1; }

# --format forcing a reader on a file that is not its input: an error that says so.
printf 'timestamp, index, power.draw [W]\n' >"$T/smi.csv"
i=0; while [ $i -lt 20 ]; do echo "2024/01/01 00:00:$((i + 10)).000, 0, 300.$i W" >>"$T/smi.csv"; i=$((i + 1)); done
check forced-dmon-on-csv 1 ingest --format dmon --telemetry "$T/smi.csv"
grep_out forced-dmon-why "smi.csv: does not look like dmon output: 0 of 21 lines read as samples (line 1: 'timestamp, index, power.draw \[W\]'); it looks like nvidia-smi-csv: pass --format nvidia-smi-csv, or leave --format out" "$T/err"
no_out forced-dmon-no-echo "the tool reported\|profiling" "$T/err"
check forced-dmon-on-runs 1 ingest --format dmon --telemetry "$T/runs.csv"
grep_out forced-runs-why "does not look like dmon output: 0 of 601 lines read as samples" "$T/err"
no_out forced-runs-no-echo "the tool reported\|profiling\|DCGM" "$T/err"
check forced-dcgmi-on-elf 1 ingest --format dcgmi-dmon --telemetry "$PFI"
grep_out forced-elf-why "does not look like dcgmi-dmon output: .*not a text file" "$T/err"
check forced-prom-on-csv 1 ingest --format prometheus --telemetry "$T/smi.csv"
grep_out forced-prom-why "does not look like prometheus output" "$T/err"
no_out forced-prom-no-advice "counters CSV" "$T/err"
# The right --format still reads.
check forced-right 0 ingest --format nvidia-smi-csv --telemetry "$T/smi.csv"

exit $fail
