#!/bin/sh
# pfi analyze --format json streams its groups (review: 100 000 groups built a 600 MB jansson
# tree before a byte was written): its peak memory stays within 64 MB of the CSV output's on
# the same 30 000 groups (the tree took about 190 MB more), and the JSON is whole: it parses,
# every group in order, the summary and options after them.
# Usage: analyze_json_stream.sh PFI_BINARY [SANITIZED]     (ctest cli_analyze_json_stream)
# SANITIZED 1: an ASan build, whose quarantine and shadow memory make peak memory no
# measure of what the program holds: the memory check is skipped (said), the JSON still
# checked whole.
set -u
PFI=$1
SANITIZED=${2:-0}
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-json-stream.XXXXXX")
trap 'rm -rf "$T"' EXIT
/usr/bin/python3 - "$PFI" "$T" "$SANITIZED" <<'PY'
import json, os, sys
pfi, tmp, sanitized = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
n = 30000
path = os.path.join(tmp, "groups.csv")
with open(path, "w") as f:
    f.write("g,cls,cap,p,t\n")
    for i in range(n):
        # power falls with the cap, throughput less: every group's PFI is defined
        for cap, tp in ((700, 1000.0), (500, 930.0 + i % 7), (300, 800.0 + i % 11)):
            f.write("job%06d,c%d,%d,%.1f,%.1f\n" % (i, i % 3, cap, 0.9 * cap, tp))

def peak_kib(fmt):
    out = os.path.join(tmp, "out." + fmt)
    pid = os.fork()
    if pid == 0:
        os.execv(pfi, [pfi, "analyze", path, "--group", "g", "--class", "cls", "--cap", "cap",
                       "--power", "p", "--throughput", "t", "--draws", "0", "--threads", "1",
                       "--format", fmt, "-o", out])
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("FAIL analyze --format %s: exit %d" % (fmt, os.waitstatus_to_exitcode(status)))
    return ru.ru_maxrss, out  # KiB on Linux

csv_kib, _ = peak_kib("csv")
json_kib, out = peak_kib("json")
fail = 0
extra = (json_kib - csv_kib) / 1024.0
if sanitized:
    print("skip json-peak-memory under a sanitizer (%.0f MB over the CSV output's)" % extra)
elif extra < 64:
    print("ok   json-peak-memory: %.0f MB over the CSV output's (%d KiB, %d KiB)"
          % (extra, json_kib, csv_kib))
else:
    print("FAIL json-peak-memory: %.0f MB over the CSV output's (%d KiB, %d KiB): the groups "
          "are held as one tree" % (extra, json_kib, csv_kib))
    fail = 1
d = json.load(open(out))
names = [g["key"]["g"] for g in d["groups"]]
if names == ["job%06d" % i for i in range(n)] and list(d) == ["groups", "summary", "options"] \
        and d["summary"]["groups"] == n and sorted(d["summary"]["by_class"]) == ["c0", "c1", "c2"]:
    print("ok   json-whole: %d groups in order, then summary and options" % n)
else:
    print("FAIL json-whole: %d groups, keys %s" % (len(names), list(d)))
    fail = 1
sys.exit(fail)
PY
