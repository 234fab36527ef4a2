#!/bin/sh
# bench/ingest_same.sh REF_PFI NEW_PFI [DIR...] — run `pfi ingest` of two builds (REF_PFI:
# today's, e.g. main's build/pfi; NEW_PFI: this tree's) on every telemetry input under DIR
# (default: tests/cases tests/data data), each with several option sets, and compare byte
# for byte: the dry-run report (stdout, stderr, exit code) and the run store written (every
# row of every table, floats as exact round-trip text, the ingested_at times left out).
# Prints one line per difference and a count; exit 0 when there is none. Not a test: it
# needs a second build. Inputs are read in place; stores go to a temp directory.
set -u
REF=$(realpath "$1") || exit 2 # absolute: the runs below cd into a temp directory
NEW=$(realpath "$2") || exit 2
shift 2
HERE=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$HERE/tests/cases" "$HERE/tests/data" "$HERE/data"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
dump() {
    /usr/bin/python3 - "$1" <<'PY'
import sqlite3, sys
try:
    c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
    for (t,) in c.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"):
        cols = [r[1] for r in c.execute("PRAGMA table_info(%s)" % t) if r[1] != "ingested_at"]
        for row in c.execute("SELECT %s FROM %s ORDER BY rowid" % (",".join(cols), t)):
            print(t, [float.hex(v) if isinstance(v, float) else v for v in row])
except sqlite3.Error as e:
    print("no store:", e)
PY
}
files=$(find "$@" -type f \( -name '*.csv' -o -name '*.txt' -o -name '*.prom' -o -name '*.xml' \
    -o -name '*.log' -o -name '*.json' \) | grep -v -e EXPECTED -e /golden/ | sort)
n=0
bad=0
for f in $files; do
    for opts in "" "--align 1" "--warmup 3" "--q 0.5" "--interval 2 --align 4 --warmup 1" \
        "--warmup 0.5 --q 1" "--warmup 20"; do
        n=$((n + 1))
        # shellcheck disable=SC2086
        (cd "$TMP" && "$REF" ingest --dry-run --telemetry "$f" $opts >ref.out 2>ref.err; echo $? >>ref.out)
        # shellcheck disable=SC2086
        (cd "$TMP" && "$NEW" ingest --dry-run --telemetry "$f" $opts >new.out 2>new.err; echo $? >>new.out)
        if ! cmp -s "$TMP/ref.out" "$TMP/new.out" || ! cmp -s "$TMP/ref.err" "$TMP/new.err"; then
            echo "DIFF dry-run: $f $opts"
            bad=$((bad + 1))
        fi
        rm -f "$TMP/ref.db" "$TMP/new.db"
        # shellcheck disable=SC2086
        (cd "$TMP" && "$REF" ingest --db ref.db --group g --cap 300 --telemetry "$f" $opts >ref.out 2>&1; echo $? >>ref.out)
        # shellcheck disable=SC2086
        (cd "$TMP" && "$NEW" ingest --db new.db --group g --cap 300 --telemetry "$f" $opts >new.out 2>&1; echo $? >>new.out)
        sed -i "s#ref.db#DB#" "$TMP/ref.out"
        sed -i "s#new.db#DB#" "$TMP/new.out"
        dump "$TMP/ref.db" >"$TMP/ref.dump"
        dump "$TMP/new.db" >"$TMP/new.dump"
        if ! cmp -s "$TMP/ref.out" "$TMP/new.out" || ! cmp -s "$TMP/ref.dump" "$TMP/new.dump"; then
            echo "DIFF store: $f $opts"
            bad=$((bad + 1))
        fi
    done
done
echo "ingest_same: $n input x option cases (dry run and store each), $bad differ"
[ "$bad" -eq 0 ]
