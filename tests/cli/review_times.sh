#!/bin/sh
# User-review regressions: impossible timestamps refused with FILE:LINE, the column and the
# text (never rolled into another day); unknown --fields names refused up front; the power
# line says why there is no job power; a last line without a newline noted by analyze and
# allocate as by ingest.
# Usage: review_times.sh PFI_BINARY SOURCE_DIR      (ctest cli_review_times)
set -u
PFI=$1
SRC=$2
fail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-review-times.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out
no_out() { # no_out NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "FAIL $1: '$2' in $3"; cat "$3"; fail=1; else echo "ok   $1"; fi
}
H='timestamp, index, power.draw [W]'
smi() { # smi FILE STAMP3: four rows of GPU 0, the third at STAMP3
    printf '%s\n2025/11/02 14:20:01.004, 0, 301.22 W\n2025/11/02 14:20:02.004, 0, 300 W\n%s, 0, 300 W\n2025/11/02 14:20:04.004, 0, 300 W\n' "$H" "$2" >"$1"
}

# 1. Feb 30 is no date: refused (exit 1) naming file, line, column and text; the old reader
# took it as March 2 ("time jumped back") and exited 0.
smi "$T/t5.csv" '2025/02/30 14:20:03.004'
check feb30 1 "$PFI" ingest --dry-run --telemetry "$T/t5.csv"
grep_out feb30-where "t5.csv:4: column 1 (timestamp): '2025/02/30 14:20:03.004' is not a valid time" "$T/err"
no_out feb30-no-jump "jumped back" "$T/err"
# Feb 29 only in a leap year (2024 is one, 2100 is not); 24:00 and minute 60 are no times.
printf '%s\n2024/02/28 23:59:59.000, 0, 300 W\n2024/02/29 00:00:00.000, 0, 300 W\n2024/02/29 00:00:01.000, 0, 300 W\n' "$H" >"$T/leap.csv"
check feb29-leap 0 "$PFI" ingest --dry-run --telemetry "$T/leap.csv"
smi "$T/nl.csv" '2025/02/29 14:20:03.004'
check feb29-2025 1 "$PFI" ingest --dry-run --telemetry "$T/nl.csv"
grep_out feb29-2025-where "nl.csv:4: .*'2025/02/29 14:20:03.004' is not a valid time" "$T/err"
smi "$T/c.csv" '2100-02-29 14:20:03'
check feb29-2100 1 "$PFI" ingest --dry-run --telemetry "$T/c.csv"
smi "$T/h24.csv" '2025/11/02 24:00:00.000'
check hour24 1 "$PFI" ingest --dry-run --telemetry "$T/h24.csv"
grep_out hour24-where "h24.csv:4: column 1 (timestamp): '2025/11/02 24:00:00.000' is not a valid time" "$T/err"
smi "$T/m60.csv" '2025/11/02 14:60:03.004'
check minute60 1 "$PFI" ingest --dry-run --telemetry "$T/m60.csv"
smi "$T/apr31.csv" '2025-04-31T14:20:03Z'
check apr31-iso 1 "$PFI" ingest --dry-run --telemetry "$T/apr31.csv"
grep_out apr31-iso-where "apr31.csv:4: .*'2025-04-31T14:20:03Z' is not a valid time" "$T/err"
# A word for a timestamp: the line and the text, not "nominal times ... 55.84 years".
smi "$T/nad.csv" 'not-a-date'
check not-a-date 1 "$PFI" ingest --dry-run --telemetry "$T/nad.csv"
grep_out not-a-date-where "nad.csv:4: column 1 (timestamp): 'not-a-date' is not a valid time" "$T/err"
no_out not-a-date-no-nominal "nominal times" "$T/err"
# Many rows (the block path of the reader): the bad one is still named.
{ echo "$H"; i=0; while [ $i -lt 200 ]; do printf '2025/11/02 14:%02d:%02d.000, 0, 300 W\n' $((i / 60)) $((i % 60)); i=$((i + 1)); done
  echo "2025/06/31 14:03:20.000, 0, 300 W"; } >"$T/long.csv"
check block-path 1 "$PFI" ingest --dry-run --telemetry "$T/long.csv"
grep_out block-path-where "long.csv:202: column 1 (timestamp): '2025/06/31 14:03:20.000' is not a valid time" "$T/err"

# pfi's replay CSV (sweep/probe --record): t_s is seconds from the recording's start, a
# number 0 or more (was: a word or NaN silently nominal times, a negative one read); the CSV's
# epoch seconds are 1970 to 9999 and an ISO 8601 offset is within +-23:59.
for bad in nan -2 abc; do
    printf 't_s,gpu,power_w\n0,0,100\n%s,0,100\n2,0,100\n' "$bad" >"$T/rec.csv"
    check "rec-t-$bad" 1 "$PFI" ingest --dry-run --telemetry "$T/rec.csv"
    grep_out "rec-t-$bad-where" "rec.csv:3: column 1 (t_s): '$bad' is not a valid time (seconds from the recording's start" "$T/err"
done
printf 't_s,gpu,power_w\n0,0,100\n1.5,0,100\n2,0,100\n' >"$T/rec.csv" # 2 s at 100 W
check rec-t-frac 0 "$PFI" ingest --dry-run --telemetry "$T/rec.csv"
grep_out rec-t-frac-energy "^energy: 200.000 J" "$T/out"
smi "$T/off.csv" '2025-11-02T14:20:03+99:00'
check iso-offset-99 1 "$PFI" ingest --dry-run --telemetry "$T/off.csv"
grep_out iso-offset-99-where "off.csv:4: column 1 (timestamp): '2025-11-02T14:20:03+99:00' is not a valid time" "$T/err"
smi "$T/ep.csv" '99999999999999'
check epoch-far 1 "$PFI" ingest --dry-run --telemetry "$T/ep.csv"
grep_out epoch-far-where "ep.csv:4: column 1 (timestamp): '99999999999999' is not a valid time" "$T/err"
# Many rows (the block path): the bad epoch and offset rows still named.
{ echo "$H"; i=0; while [ $i -lt 300 ]; do printf '%d.000, 0, 300 W\n' $((1709164800 + i)); i=$((i + 1)); done
  echo '99999999999999, 0, 300 W'; } >"$T/lep.csv"
check epoch-far-block 1 "$PFI" ingest --dry-run --telemetry "$T/lep.csv"
grep_out epoch-far-block-where "lep.csv:302: column 1 (timestamp): '99999999999999' is not a valid time" "$T/err"
{ echo "$H"; i=0; while [ $i -lt 300 ]; do printf '2024-02-29T10:%02d:%02d+01:00, 0, 300 W\n' $((i / 60)) $((i % 60)); i=$((i + 1)); done
  echo '2024-02-29T10:05:00+99:00, 0, 300 W'; } >"$T/liso.csv"
check iso-offset-block 1 "$PFI" ingest --dry-run --telemetry "$T/liso.csv"
grep_out iso-offset-block-where "liso.csv:302: column 1 (timestamp): '2024-02-29T10:05:00+99:00' is not a valid time" "$T/err"
printf '%s\n1709164800.5, 0, 300 W\n1709164801, 0, 300 W\n' "$H" >"$T/ep2.csv" # 0.5 s at 300 W
check epoch-frac 0 "$PFI" ingest --dry-run --telemetry "$T/ep2.csv"
grep_out epoch-frac-energy "^energy: 150.000 J" "$T/out"

# nvidia-smi dmon -o DT: the same rule (a bad date was skipped with a note before).
D='#Date       Time        gpu    pwr\n#YYYYMMDD   HH:MM:SS    Idx      W\n'
printf "$D"'20250514   10:00:00      0    250\n20250230   10:00:01      0    251\n' >"$T/dmon.txt"
check dmon-feb30 1 "$PFI" ingest --dry-run --telemetry "$T/dmon.txt"
grep_out dmon-feb30-where "dmon.txt:4: .*'20250230 10:00:01' is not a valid time" "$T/err"
printf "$D"'20240229   10:00:00      0    250\n20240229   10:00:01      0    251\n' >"$T/dmon29.txt"
check dmon-feb29-leap 0 "$PFI" ingest --dry-run --telemetry "$T/dmon29.txt"

# nvidia-smi -q: a Timestamp that is no time is refused on its line (was: nominal times).
Q=$SRC/tests/cases/case-17/nvsmi_q_d_power.txt
check q-good 0 "$PFI" ingest --dry-run --telemetry "$Q"
sed '0,/^Timestamp.*/s//Timestamp : Sat Feb 29 10:00:00 2025/' "$Q" >"$T/q.txt"
check q-feb29-2025 1 "$PFI" ingest --dry-run --telemetry "$T/q.txt"
grep_out q-feb29-2025-where "q.txt:4: Timestamp: 'Sat Feb 29 10:00:00 2025' is not a valid time" "$T/err"

# nvidia-smi -q -x: the same for <timestamp>.
X=$SRC/tests/fuzz/corpus/smi_xml/looped_timestamp_uuid.xml
check x-good 0 "$PFI" ingest --dry-run --telemetry "$X"
sed '0,/<timestamp>[^<]*</s//<timestamp>Sat Feb 29 10:00:00 2025</' "$X" >"$T/x.xml"
check x-feb29-2025 1 "$PFI" ingest --dry-run --telemetry "$T/x.xml"
grep_out x-feb29-2025-where "x.xml:4: <timestamp>: 'Sat Feb 29 10:00:00 2025' is not a valid time" "$T/err"

# Prometheus exposition text: a sample timestamp is an integer of epoch milliseconds, 1970 to
# the year 9999; anything else is refused on its line (was: a fraction or an exponent read as
# a time, a word or a sign silently nominal times).
prom() { # prom FILE STAMP: one power sample of GPU-a on n1 at STAMP
    printf '# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a",Hostname="n1"} 300 %s\n' "$2" >"$1"
}
for bad in 1.7e12 1709164800000.5 -5 253402300800000 NaN 2024-02-29T00:00:00Z; do
    prom "$T/bad.prom" "$bad"
    check "prom-stamp-$bad" 1 "$PFI" ingest --dry-run --telemetry "$T/bad.prom"
    grep_out "prom-stamp-$bad-where" "bad.prom:2: timestamp: '$bad' is not a valid time (milliseconds since 1970-01-01 UTC, an integer 0 to 253402300799999)" "$T/err"
done
# 2024-02-29 00:00:00 (1709164800 s), 23:59:59 that day (1709251199 s), 2025-03-01 (1740787200):
# 86399 s at 300 W is 25919700 J, and the far scrape is a gap (not integrated across).
prom "$T/p1.prom" 1709164800000; prom "$T/p2.prom" 1709251199000; prom "$T/p3.prom" 1740787200000
check prom-leap 0 "$PFI" ingest --dry-run --telemetry "$T/p1.prom" --telemetry "$T/p2.prom" --telemetry "$T/p3.prom"
grep_out prom-leap-energy "^energy: 25919700.000 J" "$T/out"
no_out prom-leap-no-interval "1 s assumed" "$T/err" # timestamped: no interval assumed

# Prometheus HTTP API: a time is epoch seconds, a JSON number or a decimal string, 1970 to 9999;
# "NaN", "+Inf", an RFC 3339 text, null or a negative time are refused naming the sample.
api() { # api FILE T1 T2: one matrix series of GPU-a, two samples
    printf '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0","UUID":"GPU-a","Hostname":"n1"},"values":[[%s,"300"],[%s,"300"]]}]}}\n' "$2" "$3" >"$1"
}
api "$T/a.json" 1709164800.25 '"1709164801.75"' # 1.5 s apart: 450 J at 300 W
check api-frac 0 "$PFI" ingest --dry-run --telemetry "$T/a.json"
grep_out api-frac-energy "^energy: 450.000 J" "$T/out"
for bad in '"NaN"' '"+Inf"' '"2024-02-29T00:00:00Z"' null -1 1e300; do
    api "$T/bad.json" 1709164800 "$bad"
    check "api-time-$bad" 1 "$PFI" ingest --dry-run --telemetry "$T/bad.json"
    grep_out "api-time-$bad-where" "bad.json: data.result\[0\].values\[1\] (DCGM_FI_DEV_POWER_USAGE GPU-a): time .* is not a valid time (seconds since 1970-01-01 UTC" "$T/err"
done

# --timezone past the zone file's table (a fat TZif stops in 2037, a slim one earlier): the
# file's POSIX rule. New York falls back on the first Sunday of November 2040 (Nov 4): 01:30
# is the repeated hour; Berlin springs forward on the last Sunday of March 2050 (Mar 27).
printf '%s\n2040/11/04 01:30:00.000, 0, 300 W\n2040/11/04 01:30:01.000, 0, 300 W\n' "$H" >"$T/ny.csv"
check tz-rule-ny 0 "$PFI" ingest --dry-run --timezone America/New_York --telemetry "$T/ny.csv"
grep_out tz-rule-ny-repeat "time zone America/New_York (--timezone); 2 in a repeated fall-back hour, 0 in a skipped" "$T/out"
printf '%s\n2050/03/27 02:30:00.000, 0, 300 W\n2050/03/27 03:00:00.000, 0, 300 W\n' "$H" >"$T/be.csv"
check tz-rule-berlin 0 "$PFI" ingest --dry-run --timezone Europe/Berlin --telemetry "$T/be.csv"
grep_out tz-rule-berlin-skip "1 in a skipped spring-forward hour" "$T/out"
# 02:30 CET (the offset before the change) is 01:30 UTC, 03:00 CEST is 01:00 UTC: back 30 min
grep_out tz-rule-berlin-back "time jumped back 1800.000 s" "$T/err"
# A slim TZif file (no transitions, only its rule: Berlin's, CET-1CEST,M3.5.0,M10.5.0/3): the
# rule for every year (was: CET all year, the fall-back's second pass a "jump back"). 2024-10-27
# 02:30 and 02:59:59 CEST (00:30:00, 00:59:59 UTC), then 02:00:00 and 02:00:01 CET (01:00:00,
# 01:00:01 UTC): 1801 s spanned, two 1 s steps integrated (600 J at 300 W), as Europe/Berlin.
printf '%s\n2024/10/27 02:30:00.000, 0, 300 W\n2024/10/27 02:59:59.000, 0, 300 W\n2024/10/27 02:00:00.000, 0, 300 W\n2024/10/27 02:00:01.000, 0, 300 W\n' "$H" >"$T/fb.csv"
for z in "$SRC/tests/data/tz/slim_berlin.tzif" Europe/Berlin; do
    check "tz-slim-$z" 0 "$PFI" ingest --dry-run --timezone "$z" --telemetry "$T/fb.csv"
    grep_out "tz-slim-$z-repeat" "4 in a repeated fall-back hour, 0 in a skipped" "$T/out"
    grep_out "tz-slim-$z-energy" "^energy: 600.000 J (power-trapezoid; partial: gpu0 covers 2 of 1801 s)" "$T/out"
    no_out "tz-slim-$z-no-jump" "jumped back" "$T/err"
done
check tz-unknown 2 "$PFI" ingest --dry-run --timezone Europe/Atlantis --telemetry "$T/be.csv"
grep_out tz-unknown-why "--timezone 'Europe/Atlantis': no such time zone" "$T/err"

# Training logs: a timestamp that is no time (torchtitan's), a tqdm bar's elapsed clock past
# :59, refused on their line (was: the record's time dropped, or 75:80 read as 76:20).
TT=$SRC/tests/fuzz/corpus/trainlog/auto_torchtitan.log
tail -c +2 "$TT" | sed 's/2025-01-01 12:00:10/2025-02-30 12:00:10/' >"$T/titan.log"
check titan-feb30 1 "$PFI" ingest --dry-run --telemetry "$SRC/examples/smi.csv" --throughput-log "$T/titan.log"
grep_out titan-feb30-where "titan.log:2: torchtitan: timestamp '2025-02-30 12:00:10' is not a valid time" "$T/err"
# Across Feb 29 into March 1 with milliseconds: 9.5 s at 7000 tokens/s, then 20 s at 8000:
# (7000 x 9.5 + 8000 x 20) / 29.5 = 7677.966 tokens/s.
tail -c +2 "$TT" | sed 's/2025-01-01 12:00:00,000/2024-02-29 23:59:50,500/; s/2025-01-01 12:00:10,000/2024-03-01 00:00:00,000/; s/2025-01-01 12:00:30,000/2024-03-01 00:00:20,000/' >"$T/titan29.log"
check titan-feb29 0 "$PFI" ingest --dry-run --telemetry "$SRC/examples/smi.csv" --throughput-log "$T/titan29.log"
grep_out titan-feb29-rate "work/time 7677.97 tokens/s" "$T/out"
tail -c +2 "$SRC/tests/fuzz/corpus/trainlog/auto_tqdm_sit.log" | sed 's/\[00:05</[00:75</' >"$T/bar.log"
check tqdm-75 1 "$PFI" ingest --dry-run --telemetry "$SRC/examples/smi.csv" --throughput-log "$T/bar.log"
grep_out tqdm-75-where "bar.log:1: tqdm: elapsed time '00:75' is not a valid time (\[H:\]MM:SS" "$T/err"

# Kernel logs: an NVIDIA line's wall-clock stamp (dmesg -T, --time-format iso, journalctl)
# that is no time refused on its line; Feb 29 of a leap year is kept as written.
K=$SRC/tests/fuzz/corpus/kernlog/dmesg_T.txt
sed 's/Sun Nov  2 14:20:03 2025\] NVRM: Xid (PCI:0000:3D:00): 79/Sat Feb 29 14:20:03 2025] NVRM: Xid (PCI:0000:3D:00): 79/' "$K" >"$T/k.txt"
check kern-feb29-2025 1 "$PFI" ingest --dry-run --telemetry "$SRC/examples/smi.csv" --kernel-log "$T/k.txt"
grep_out kern-feb29-2025-where "k.txt:3: timestamp: '\[Sat Feb 29 14:20:03 2025\]' is not a valid time" "$T/err"
printf '2025-11-02T24:20:03,441915+01:00 NVRM: Xid (PCI:0000:3d:00): 79, pid=1, GPU has fallen off the bus.\n' >"$T/kiso.txt"
check kern-iso-24h 1 "$PFI" ingest --dry-run --telemetry "$SRC/examples/smi.csv" --kernel-log "$T/kiso.txt"
grep_out kern-iso-24h-where "kiso.txt:1: timestamp: '2025-11-02T24:20:03,441915+01:00' is not a valid time" "$T/err"
printf 'Feb 30 14:20:03 node7 kernel: NVRM: Xid (PCI:0000:3d:00): 79, pid=1, GPU has fallen off the bus.\n' >"$T/kj.txt"
check kern-journal-feb30 1 "$PFI" ingest --dry-run --telemetry "$SRC/examples/smi.csv" --kernel-log "$T/kj.txt"
grep_out kern-journal-feb30-where "kj.txt:1: timestamp: 'Feb 30 14:20:03' is not a valid time" "$T/err"
sed 's/Sun Nov  2 14:20:03 2025\] NVRM: Xid (PCI:0000:3D:00): 79/Thu Feb 29 23:59:59 2024] NVRM: Xid (PCI:0000:3D:00): 79/' "$K" >"$T/k29.txt"
check kern-feb29-2024 0 "$PFI" ingest --dry-run --telemetry "$SRC/examples/smi.csv" --kernel-log "$T/k29.txt"
grep_out kern-feb29-2024-kept "Thu Feb 29 23:59:59 2024" "$T/out"

# The control audit log (pfi report --settlement, pfi report): a period's t_s is controller
# seconds, finite, 0 or more, never before the period before's (was: a negative period length
# or NaN times summed into the settlement).
audit() { # audit FILE T3: 4 event periods at 0, 10, T3, 30 s
    rm -f "$1"
    sqlite3 "$1" "CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL,
        event INTEGER, budget_w REAL, measured_w REAL, ref_w REAL, tput_tok_s REAL);
        CREATE TABLE ctl_jobs(period INTEGER, job TEXT, gpus INTEGER, ref_tput REAL, tput REAL);
        INSERT INTO ctl_periods(run, t_s, event, budget_w, measured_w, ref_w, tput_tok_s) VALUES
        (1, 0, 1, 1000, 900, 1200, 10), (1, 10, 1, 1000, 900, 1200, 10),
        (1, $2, 1, 1000, 900, 1200, 10), (1, 30, 1, 1000, 900, 1200, 10);"
}
if command -v sqlite3 >/dev/null 2>&1; then
    audit "$T/ok.db" 20.5 # the last period lasts as long as the one before: 30 + 9.5
    check audit-frac 0 "$PFI" report --settlement --json "$T/ok.db"
    grep_out audit-frac-end '"event_end_s": 39.5,' "$T/out"
    for bad in 5 -3 NULL; do
        audit "$T/bad.db" "$bad"
        check "audit-t-$bad" 1 "$PFI" report --settlement "$T/bad.db"
        grep_out "audit-t-$bad-where" "audit log: .*bad.db: ctl_periods id 3: t_s $bad is not a valid time (controller seconds since its start: finite, 0 or more, not before the period before's 10)" "$T/err"
    done
else
    echo "skip audit-*: no sqlite3"
fi

# The replay backend's CSV (what sweep/probe --record write, played by --backend replay): t_s
# is seconds from the recording's start, 0 or more and finite (was: inf taken, the record never
# replayed); the refusal names the file, line and column.
for bad in inf -1 abc; do
    printf 't_s,gpu,power_w\n0,0,100\n%s,0,100\n' "$bad" >"$T/rp.csv"
    check "replay-t-$bad" 1 "$PFI" probe --backend replay --replay "$T/rp.csv"
    grep_out "replay-t-$bad-where" "rp.csv:3: column 't_s': '$bad' is not a valid time (seconds from the recording's start" "$T/err"
done
printf 't_s,gpu,power_w\n0,0,100\n1.5,0,250\n' >"$T/rp.csv"
check replay-t-frac 0 "$PFI" probe --backend replay --replay "$T/rp.csv"

# --epoch, the Unix time a controller's schedule counts from: before the year 10000.
check control-epoch 2 "$PFI" control --epoch 1e300 --budget 1000
grep_out control-epoch-says "control: --epoch: bad value '1e300'" "$T/err"
check openadr-epoch 2 "$PFI" openadr poll --epoch 1e300
grep_out openadr-epoch-says "openadr poll: --epoch: bad value '1e300': expected a Unix time > 0, before the year 10000" "$T/err"

# 2. --fields names: an unknown one refused before reading (exit 2), naming it; an nvidia-smi
# query name the table does not list (memory.used) is still taken.
check fields-bogus 2 "$PFI" ingest --format nvidia-smi-csv --fields bogus --telemetry "$SRC/examples/noheader.csv"
grep_out fields-bogus-name "--fields: unknown field 'bogus'" "$T/err"
no_out fields-bogus-no-rows "row has" "$T/err"
printf '2025/11/02 14:20:01.004, 0, 301 W, 100 MiB\n2025/11/02 14:20:02.004, 0, 302 W, 100 MiB\n' >"$T/nh.csv"
check fields-query-name 0 "$PFI" ingest --dry-run --fields 'timestamp, index, power.draw, memory.used' --telemetry "$T/nh.csv"

# 3. No job power: the power line says why.
check warmup-all 1 "$PFI" ingest --dry-run --telemetry "$SRC/examples/smi.csv" --warmup 10
grep_out warmup-all-why "^power: power_w: none (every complete timestamp within the warm-up" "$T/out"

# 4. A last line without its newline: a note from analyze and allocate (not a refusal).
head -c -1 "$SRC/examples/runs.csv" >"$T/runs.csv"
M="--group model,task,gpus --cap cap_w --power power_w --throughput tokens_per_s"
check analyze-cut 0 "$PFI" analyze "$T/runs.csv" $M
grep_out analyze-cut-note "note: .*runs.csv:11: the last line has no newline" "$T/err"
check analyze-whole 0 "$PFI" analyze "$SRC/examples/runs.csv" $M
no_out analyze-whole-quiet "no newline" "$T/err"
head -c -1 "$SRC/examples/jobs.csv" >"$T/jobs.csv"
check allocate-cut 0 "$PFI" allocate --reduction 30% "$T/jobs.csv"
grep_out allocate-cut-note "note: .*jobs.csv:10: the last line has no newline" "$T/err"
check allocate-cut-stdin 0 sh -c "\"$PFI\" allocate --reduction 30% - <\"$T/jobs.csv\""
grep_out allocate-cut-stdin-note "note: (stdin):10: the last line has no newline" "$T/err"

exit $fail
