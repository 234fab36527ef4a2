#!/bin/sh
# pfi ingest of very many GPUs and fields (issue 14: no hidden limit rejects a whole input):
# a Prometheus scrape of 20 000 GPUs is read whole; one of 70 000 GPUs (past
# PFI_TELEMETRY_MAX_ENTITIES, 65 536) keeps the first 65 536 and drops the rest with a note
# naming the limit and how to raise it — at a size that a scan of every known GPU per new
# GPU (quadratic) would take minutes to reach; a scrape and an nvidia-smi CSV with more
# distinct fields than PFI_TELEMETRY_MAX_FIELDS allows (255 from the input) drop the
# fields past it with a note and read the rest; so do a CSV row of more than MAX_COLS
# columns and an XML document over 16 MiB. The expected sums are awk's, over the
# generated files (the same lines pfi reads), never pfi's.
# usage: ingest_many_gpus.sh PFI
set -u
PFI=$1
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/cli/check.sh"

# scrape N FILE: one DCGM power sample per GPU, 8 GPUs a node, distinct UUIDs, values with
# exact binary fractions (sums are exact in double and in awk)
scrape() {
    awk -v n="$1" 'BEGIN {
        print "# TYPE DCGM_FI_DEV_POWER_USAGE gauge"
        for (i = 0; i < n; i++)
            printf "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",UUID=\"GPU-%08x-0000-0000-0000-000000000000\",hostname=\"node-%05d\"} %.2f\n",
                i % 8, i, int(i / 8), 100 + (i * 37) % 600 + 0.25
    }' >"$2"
}
# sum_first K FILE: the job power awk reads off the first K samples, "%.4f"
sum_first() {
    awk -v k="$1" '/^DCGM_FI_DEV_POWER_USAGE/ && n < k { s += $NF; n++ } END { printf "%.4f\n", s }' "$2"
}
# job_is NAME WATTS: the report's job power is WATTS
job_is() {
    got=$(sed -n 's/^power: power_w job \([0-9.]*\) W.*/\1/p' "$T/out")
    if [ "$got" = "$2" ]; then echo "ok   $1"; else
        echo "FAIL $1: job power '$got', want $2"; fail=1; fi
}
# gpus_are NAME N: the report lists N GPUs (one line each)
gpus_are() {
    got=$(grep -c '^  node-[0-9]*/GPU-' "$T/out")
    if [ "$got" -eq "$2" ]; then echo "ok   $1"; else
        echo "FAIL $1: $got GPUs listed, want $2"; fail=1; fi
}

scrape 20000 "$T/p20k.prom"
check scrape-20k 0 "$PFI" ingest --dry-run --telemetry "$T/p20k.prom"
gpus_are scrape-20k-gpus 20000
job_is scrape-20k-job "$(sum_first 20000 "$T/p20k.prom")"
grep_out scrape-20k-rows "format prometheus, 20000 rows" "$T/out"
if grep -q "past the limit" "$T/out" "$T/err"; then echo "FAIL scrape-20k: a limit noted"; fail=1; fi

# Past the entity limit: the first 65 536 GPUs read (the scrape's first 65 536 lines), the
# 4 464 after them dropped, named in a note and counted in the summary.
scrape 70000 "$T/p70k.prom"
check scrape-70k 0 "$PFI" ingest --dry-run --telemetry "$T/p70k.prom"
gpus_are scrape-70k-gpus 65536
job_is scrape-70k-job "$(sum_first 65536 "$T/p70k.prom")"
grep_out scrape-70k-note "more than 65536 GPUs and other entities in one run: 'node-08192/GPU-00010000-0000-0000-0000-000000000000' and any later new ones are not read, the rest is (PFI_TELEMETRY_MAX_ENTITIES in pfi/telemetry.h: raise it and rebuild" "$T/err"
grep_out scrape-70k-summary "4464 GPUs past the limit of 65536 not read (4464 rows): PFI_TELEMETRY_MAX_ENTITIES" "$T/out"

# Past the field limit in a scrape: the power first, then 300 other DCGM_FI_* families on
# both GPUs: 254 of them fit beside the power (255 from the input), 46 are dropped.
awk 'BEGIN {
    for (g = 0; g < 2; g++)
        printf "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",UUID=\"GPU-%08x-1111-0000-0000-000000000000\",hostname=\"node-f\"} %.2f\n", g, g, 300.5 + g
    for (k = 0; k < 300; k++)
        for (g = 0; g < 2; g++)
            printf "DCGM_FI_PROF_TEST_%03d{gpu=\"%d\",UUID=\"GPU-%08x-1111-0000-0000-000000000000\",hostname=\"node-f\"} %d\n", k, g, g, k
}' >"$T/fields.prom"
check scrape-fields 0 "$PFI" ingest --dry-run --telemetry "$T/fields.prom"
job_is scrape-fields-job "$(awk '/^DCGM_FI_DEV_POWER_USAGE/ { s += $NF } END { printf "%.4f", s }' "$T/fields.prom")"
grep_out scrape-fields-note "more than 255 distinct fields: 'DCGM_FI_PROF_TEST_254' and any later new ones are not read, the rest is (PFI_TELEMETRY_MAX_FIELDS in pfi/telemetry.h" "$T/err"
grep_out scrape-fields-summary "46 fields past the limit of 255 not read: PFI_TELEMETRY_MAX_FIELDS" "$T/out"
grep_out scrape-fields-rows "format prometheus, 2 rows, 0 lines skipped" "$T/out"

# The same in an nvidia-smi CSV: 300 value columns after the power (a header names hold
# no digits: test.faaa, test.faab, ...; the 255th from the input is k = 254, "test.faju");
# the power and the columns before the limit read on every row.
awk 'BEGIN {
    a = "abcdefghijklmnopqrstuvwxyz"
    printf "timestamp, index, power.draw [W]"
    for (k = 0; k < 300; k++)
        printf ", test.f%s%s%s", substr(a, int(k / 676) + 1, 1), substr(a, int(k / 26) % 26 + 1, 1), substr(a, k % 26 + 1, 1)
    printf "\n"
    for (r = 0; r < 3; r++)
        for (g = 0; g < 2; g++) {
            printf "2025/01/01 00:00:%02d.000, %d, %.2f W", r, g, 200.25 + 10 * g + r
            for (k = 0; k < 300; k++) printf ", %d", k
            printf "\n"
        }
}' >"$T/fields.csv"
check csv-fields 0 "$PFI" ingest --dry-run --telemetry "$T/fields.csv"
grep_out csv-fields-note "more than 255 distinct fields: 'test.faju' and any later new ones are not read" "$T/err"
grep_out csv-fields-summary "46 fields past the limit of 255 not read" "$T/out"
grep_out csv-fields-rows "format nvidia-smi-csv, 6 rows, 0 lines skipped" "$T/out"
# each GPU's mean power over its 3 rows: (200.25 + 201.25 + 202.25) / 3, +10 for gpu1
grep_out csv-fields-gpu0 "gpu0: 3 rows, power_w 3 valid / 0 missing / 0 out of range, mean 201.2500 W" "$T/out"
grep_out csv-fields-gpu1 "gpu1: 3 rows, power_w 3 valid / 0 missing / 0 out of range, mean 211.2500 W" "$T/out"

# And in a dcgmi dmon: 300 field columns after POWER (short names F000..F299, unknown to
# pfi, read as written); the rows go the general way once a column is dropped.
awk 'BEGIN {
    printf "#Entity   POWER"
    for (k = 0; k < 300; k++) printf " F%03d", k
    printf "\nID\n"
    for (r = 0; r < 3; r++)
        for (g = 0; g < 2; g++) {
            printf "GPU %d     %.3f", g, 300.5 + 20 * g + 2 * r
            for (k = 0; k < 300; k++) printf " %d", k
            printf "\n"
        }
}' >"$T/fields.dcgmi"
check dcgmi-fields 0 "$PFI" ingest --dry-run --interval 1 --telemetry "$T/fields.dcgmi"
grep_out dcgmi-fields-note "more than 255 distinct fields: 'F254' and any later new ones are not read" "$T/err"
grep_out dcgmi-fields-summary "46 fields past the limit of 255 not read" "$T/out"
grep_out dcgmi-fields-rows "format dcgmi-dmon, 6 rows, 0 lines skipped" "$T/out"
# (300.5 + 302.5 + 304.5) / 3, +20 for GPU 1
grep_out dcgmi-fields-gpu0 "GPU 0: 3 rows, power_w 3 valid / 0 missing / 0 out of range, mean 302.5000 W" "$T/out"
grep_out dcgmi-fields-gpu1 "GPU 1: 3 rows, power_w 3 valid / 0 missing / 0 out of range, mean 322.5000 W" "$T/out"

# A row of more columns than the CSV reader takes (MAX_COLS, 512): that line skipped with a
# note naming the constant, the rows around it read.
awk 'BEGIN {
    print "timestamp, index, power.draw [W]"
    print "2025/01/01 00:00:00.000, 0, 100.00 W"
    printf "2025/01/01 00:00:01.000, 0, 999.00 W"
    for (k = 0; k < 600; k++) printf ", 1"
    printf "\n"
    print "2025/01/01 00:00:02.000, 0, 102.00 W"
}' >"$T/cols.csv"
check csv-columns 0 "$PFI" ingest --dry-run --telemetry "$T/cols.csv"
grep_out csv-columns-note "cols.csv:3: more than 512 columns: line skipped, the rest is read (MAX_COLS in src/lib/telemetry/nvidia_smi.c: raise it and rebuild)" "$T/err"
grep_out csv-columns-rows "2 rows, 1 lines skipped" "$T/out"
# (100 + 102) / 2: the long row's 999 W is not read
grep_out csv-columns-mean "gpu0: 2 rows, power_w 2 valid / 0 missing / 0 out of range, mean 101.0000 W" "$T/out"

# An nvidia-smi -q -x capture whose middle document is past PFI_TELEMETRY_MAX_XML_DOC
# (16 MiB; 300 000 comment lines of 65 bytes): that document not read, with a note naming
# the constant; the two around it are (mean (100 + 102) / 2). Skipped without libxml2.
xdoc() { printf '<?xml version="1.0" ?>\n<nvidia_smi_log>\n<timestamp>Wed Jan 14 07:21:%02d 2026</timestamp>\n' "$1"; }
xgpu() { printf '<gpu id="00000000:06:00.0"><gpu_power_readings><average_power_draw>%s W</average_power_draw></gpu_power_readings></gpu>\n</nvidia_smi_log>\n' "$1"; }
{
    xdoc 9; xgpu 100.00
    xdoc 10; awk 'BEGIN { for (i = 0; i < 300000; i++) print "<!-- padding padding padding padding padding padding padding -->" }'; xgpu 999.00
    xdoc 11; xgpu 102.00
} >"$T/big.xml"
"$PFI" ingest --dry-run --telemetry "$T/big.xml" >"$T/out" 2>"$T/err"
if grep -q "needs libxml2" "$T/err"; then echo "skip xml-doc-limit: no libxml2"; else
    grep_out xml-doc-note "big.xml:6: XML document longer than 16777216 bytes: not read, the rest is (PFI_TELEMETRY_MAX_XML_DOC in src/lib/telemetry/nvidia_smi_xml.c: raise it and rebuild)" "$T/err"
    grep_out xml-doc-rows "format nvidia-smi-xml, 2 rows, 1 lines skipped" "$T/out"
    grep_out xml-doc-mean "gpu0: 2 rows, power_avg_w 2 valid / 0 missing / 0 out of range, mean 101.0000 W" "$T/out"
fi
exit $fail
