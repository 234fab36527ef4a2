#!/bin/sh
# Record what pfi's commands print on the shipped data, so that two builds (before and after
# a change that must not change behaviour) can be compared byte for byte.
#
# Usage: output-snapshot.sh BUILD_DIR OUT_DIR
#   Runs a fixed list of commands with BUILD_DIR/pfi and BUILD_DIR/pfid, from a scratch
#   directory, and writes each command's stdout, stderr, exit code and output files under
#   OUT_DIR/NAME.{out,err,rc} and OUT_DIR/NAME.files/.
# Compare:  output-snapshot.sh build-old /tmp/a && output-snapshot.sh build /tmp/b &&
#           diff -r /tmp/a /tmp/b && echo identical
set -eu
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
ln -s "$build/pfi" "$work/bin/pfi"
ln -s "$build/pfid" "$work/bin/pfid"
ln -s "$src/data" "$work/data"
ln -s "$src/tests" "$work/tests"
ln -s "$src/examples" "$work/examples"
PATH="$work/bin:$PATH"
export PATH TZ=UTC LC_ALL=C

# run NAME COMMAND...: the command runs in a fresh directory of its own, so files it writes
# (figures, stores, CSV) are recorded too
run() {
    name=$1
    shift
    d="$work/run/$name"
    mkdir -p "$d"
    rc=0
    (cd "$d" && "$@") >"$out/$name.out" 2>"$out/$name.err" || rc=$?
    echo "$rc" >"$out/$name.rc"
    # files the command wrote (a store is compared as a SQL dump, not as pages)
    for f in $(cd "$d" && find . -type f | sort); do
        mkdir -p "$out/$name.files/$(dirname "$f")"
        case $f in
        *.db | *.sqlite) sqlite3 "$d/$f" .dump >"$out/$name.files/$f.sql" ;;
        *) cp "$d/$f" "$out/$name.files/$f" ;;
        esac
    done
}
# every command runs two levels below $work: the paths it prints are the same in every run
mkdir -p "$work/run/.top"
cd "$work/run/.top"
D=../../data
T=../../tests
E=../../examples

run help pfi --help
for v in analyze stats fit predict library ingest runs allocate simulate sweep restore probe \
    control report demo version; do
    run "help-$v" pfi "$v" --help
done
run help-pfid pfid --help
run version pfi version
run analyze pfi analyze
run analyze-noise pfi analyze --noise-rel 0.01 --draws 2000 --plot curves.png \
    $D/zeus_jit_profile $D/zeus_nsdi23_power
run analyze-csv pfi analyze --format csv $D/zeus_nsdi23_power
run analyze-json pfi analyze --format json $D/zeus_jit_profile
run analyze-bad pfi analyze /nonexistent
run library pfi library generate lib
run library-stats sh -c 'pfi library generate --quiet lib && pfi stats lib &&
    pfi stats lib --format csv && pfi stats lib --format json'
run library-fit sh -c 'pfi library generate --quiet lib && pfi fit lib -m m.json &&
    pfi predict -m m.json --groups lib'
run allocate pfi allocate $E/jobs.csv
run allocate-csv pfi allocate --format csv --strategy pfi-weighted --cap-step 25 $E/jobs.csv
run simulate pfi simulate --workloads 20 --jobs 20
run simulate-csv pfi simulate --workloads 10 --jobs 10 --format csv
for c in $T/cases/case-*; do
    for f in "$c"/*; do
        case $f in *EXPECTED.md) continue ;; esac
        n=$(basename "$c")-$(basename "$f")
        run "ingest-$n" pfi ingest --dry-run --telemetry "$f"
    done
done
run ingest-store sh -c 'for f in ../../tests/data/trainlog/*.log; do
    pfi ingest --db runs.db --group g --cap 300 --throughput-log "$f" \
        --telemetry ../../tests/cases/case-25/query.csv; done; pfi runs --db runs.db;
    pfi analyze --db runs.db'
run probe-emulated pfi probe --backend emulated
run sweep-emulated sh -c 'pfi sweep --backend emulated --caps 300,250,200 --duration 2s \
    --interval 100ms --warmup 0 -o sw --db s.db --format csv; pfi runs --db s.db'
# pfid started on loopback (emulated GPUs, any port) and stopped: what it logs on the way
run pfid-start-stop sh -c 'pfid -b emulated -l 127.0.0.1:0 -s port_file=port -j journal \
    -t /nonexistent/token 2>log & p=$!; i=0; while [ ! -s port ] && [ $i -lt 100 ]; do
    sleep 0.1; i=$((i + 1)); done; kill -TERM $p; wait $p; echo "exit $?"; rm -f port
    sed "s/(port [0-9]*)/(port PORT)/" log; rm -f log'

# what differs from run to run by design: wall-clock stamps, the scratch directory and the
# source tree's path (the default data directory is compiled in)
find "$out" -type f | while read -r f; do
    sed -i -e 's/20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z/TIMESTAMP/g' \
        -e "s|$work|WORK|g" -e "s|$src|SRC|g" "$f"
done
echo "pfi: snapshot of $(ls "$out" | wc -l) outputs in $out"
