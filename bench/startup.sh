#!/bin/sh
# Start-up cost of the pfi command: shared libraries initialised, wall time per process and
# peak resident set of `pfi --help` and `pfi analyze data/zeus_jit_profile`, for a reference
# build and a candidate build side by side, with the ratio reference / candidate.
#
# Usage: bench/startup.sh REF_PFI NEW_PFI [RUNS]     (RUNS per command, default 50)
#   e.g. bench/startup.sh ../pfi-old/build/pfi build/pfi
# Run from the source tree (the analyze input is data/zeus_jit_profile).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 REF_PFI NEW_PFI [RUNS]" >&2; exit 2; }
ref=$1 new=$2 runs=${3:-50}
cd "$(dirname "$0")/.."
libs() { LD_DEBUG=libs "$1" --help 2>&1 >/dev/null | grep -c 'calling init'; }
# us_per_run PFI ARGS...: mean wall time of RUNS processes, microseconds
us_per_run() {
    p=$1
    shift
    s=$(date +%s%N)
    i=0
    while [ "$i" -lt "$runs" ]; do
        "$p" "$@" >/dev/null 2>&1 || true
        i=$((i + 1))
    done
    e=$(date +%s%N)
    echo $(((e - s) / runs / 1000))
}
rss_kb() {
    p=$1
    shift
    /usr/bin/time -f %M "$p" "$@" 2>&1 >/dev/null | tail -1
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf (b > 0 ? "%.2fx" : "-"), a / b }'; }
printf '%-46s %10s %10s %7s\n' "measure" "reference" "candidate" "ratio"
a=$(libs "$ref") b=$(libs "$new")
printf '%-46s %10s %10s %7s\n' "libraries initialised (--help)" "$a" "$b" "$(ratio "$a" "$b")"
for cmd in "--help" "analyze data/zeus_jit_profile"; do
    # shellcheck disable=SC2086
    a=$(us_per_run "$ref" $cmd) b=$(us_per_run "$new" $cmd)
    printf '%-46s %10s %10s %7s\n' "pfi $cmd: us per run" "$a" "$b" "$(ratio "$a" "$b")"
    # shellcheck disable=SC2086
    a=$(rss_kb "$ref" $cmd) b=$(rss_kb "$new" $cmd)
    printf '%-46s %10s %10s %7s\n' "pfi $cmd: max RSS KB" "$a" "$b" "$(ratio "$a" "$b")"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
