#!/bin/sh
# bench/control: pfid agents (emulated GPUs, 8 each) on loopback, and the controller
# (bench/control_bench: the library's pfi_ctl_step, what `pfi control` runs each period)
# against the first N of them for each N: the time from a budget change to all caps
# confirmed (goal at 1 000 agents: <= 500 ms), the controller's CPU per period (goal <= 50 ms),
# its peak memory, and the agents' memory.
# usage: bench/control.sh [BUILD_DIR] [SIZES] [PERIODS]     (default: build "64 256 1000" 12)
# env: BENCH_AGENTS which agents, in turn (default "pfid farm"): pfid = real pfid processes,
#      farm = the in-process stand-in (bench/agent_farm: pfid's own code, every agent on its
#      own port, all in one process; see bench/README.md),
#      PFI_AGENT_INTERVAL (the agents' sampling interval; default 1s),
#      BENCH_PACE=0 steps the periods back to back (default: paced at 1 s as `pfi control`),
#      BENCH_TMP where the agents' files go, their cap journals among them (default /dev/shm
#      when writable: on a cluster every node writes its journal to its own disk at once; on
#      one machine 1 000 journals' fsyncs queue on one disk),
#      BENCH_AUDIT=1 also runs each size with the SQLite audit log (`--db`),
#      BENCH_KEEP=1 keeps the work directory (the racks' audit logs among it),
#      BENCH_WRAP a command to run the controller under (e.g. "perf record -g -o FILE"),
#      BENCH_RACKS the rack controllers of the two-level row at the largest size (default 8;
#      0 skips it): `pfi control --children` over BENCH_RACKS `pfi control --agents --listen`
#      processes (bench/control_hier.py reads their audit logs), the site's ticks BENCH_LEAD s
#      (0.3) ahead of the racks' (a rack starts a period when its budget changes, at the
#      earliest a tenth of a period after its last); BENCH_STANDIN=1
#      adds the earlier stand-in row (control_bench's rack children: see bench/README.md).
#      BENCH_CURL=1 adds a row per size with every request through libcurl (BENCH_HTTP=curl:
#      the controller's client before its own), BENCH_BASE=PATH a row per size with another
#      build's control_bench (an earlier commit's, against the same agents), both before the
#      flat row. BENCH_TRACE=1: control_bench prints each period (wall, CPU, caps) on stderr.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
SIZES=${2:-64 256 1000}
PERIODS=${3:-12}
PFI_AGENT_BIN=${PFI_AGENT_BIN:-$BUILD/pfid}
PFI_AGENT_INTERVAL=${PFI_AGENT_INTERVAL:-1s}
KINDS=${BENCH_AGENTS:-pfid farm}
if [ -z "${BENCH_TMP:-}" ]; then
    BENCH_TMP=${TMPDIR:-/tmp}
    [ -d /dev/shm ] && [ -w /dev/shm ] && BENCH_TMP=/dev/shm
fi
N=0
for s in $SIZES; do [ "$s" -gt "$N" ] && N=$s; done
WORK=$(mktemp -d "$BENCH_TMP/pfi-bench-control.XXXXXX")
. "$SRC/scripts/cluster-lib.sh"
trap 'cluster_cleanup; [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$WORK"' EXIT INT TERM

# agent K's jobs: a third dense on 8 GPUs, a third two MoE jobs on 4 each, a third dense-ft
agent_jobs() {
    case $(($1 % 3)) in
    0) echo "a$1:dense:8:0.93:24000" ;;
    1) echo "a$1:moe-ft:4:0.5:9000 b$1:moe-pt:4:0.8:12000" ;;
    2) echo "a$1:dense-ft:8:0.9:15000" ;;
    esac
}

# start N agents of kind $1; their memory into $rss (KiB)
start_agents() {
    : > "$WORK/agents"
    k=1
    if [ "$1" = pfid ]; then
        while [ $k -le "$N" ]; do
            # shellcheck disable=SC2046
            start_agent "n$k" "t$k" $(agent_jobs $k) || return 1
            k=$((k + 1))
        done
    else
        confs=""
        while [ $k -le "$N" ]; do
            # shellcheck disable=SC2046
            agent_conf "n$k" "t$k" $(agent_jobs $k) || return 1
            rm -f "$dir/port"
            confs="$confs $dir/pfid.conf"
            k=$((k + 1))
        done
        # shellcheck disable=SC2086
        "$BUILD/bench/agent_farm" $confs > "$WORK/farm.out" 2> "$WORK/farm.log" &
        CLUSTER_PIDS="$CLUSTER_PIDS $!"
        while ! grep -q '^ready' "$WORK/farm.out" 2>/dev/null; do
            if ! kill -0 $! 2>/dev/null; then
                echo "agent_farm did not start:" >&2
                cat "$WORK/farm.log" >&2
                return 1
            fi
            sleep 0.1
        done
        k=1
        while [ $k -le "$N" ]; do
            echo "http://127.0.0.1:$(cat "$WORK/agent.n$k/port") t$k" >> "$WORK/agents"
            k=$((k + 1))
        done
        chmod 600 "$WORK/agents"
    fi
    rss=0
    for p in $CLUSTER_PIDS; do
        r=$(awk '/^VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)
        rss=$((rss + ${r:-0}))
    done
}

# cpu_s PID: the CPU (s) process PID has run so far (/proc/PID/schedstat, ns)
cpu_s() {
    awk '{ printf "%.6f", $1 / 1e9 }' "/proc/$1/schedstat" 2>/dev/null || echo nan
}

# The two-level row: RACKS rack controllers (`pfi control --agents SLICE --listen 0 --db`,
# each over a consecutive slice of the first N agents) and a site controller over them
# (`pfi control --children`) whose schedule changes the reduction every third period as
# control_bench does (30, 10, 40, 20 %). bench/control_hier.py prints the row.
hier_real() {
    kind=$1 racks=$2
    run=$((PERIODS + 2))
    : > "$WORK/children"
    rpids="" dbs=""
    q=0
    while [ $q -lt "$racks" ]; do
        lo=$((q * N / racks)) hi=$(((q + 1) * N / racks))
        (umask 077 && sed -n "$((lo + 1)),${hi}p" "$WORK/agents" > "$WORK/rack$q.agents" &&
            printf 'rack%s-%s\n' "$q" "$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
                > "$WORK/rack$q.token")
        rm -f "$WORK/rack$q.db"*
        "$BUILD/pfi" control --agents "$WORK/rack$q.agents" --listen 0 \
            --token-file "$WORK/rack$q.token" --period 1 --run-for $((run + 30)) --quiet \
            --db "$WORK/rack$q.db" > "$WORK/rack$q.out" 2> "$WORK/rack$q.err" &
        rpids="$rpids $!"
        dbs="$dbs $WORK/rack$q.db"
        q=$((q + 1))
    done
    q=0
    for p in $rpids; do
        n=0
        until grep -q 'listening on 127.0.0.1:' "$WORK/rack$q.err" 2>/dev/null &&
            [ -s "$WORK/rack$q.db" ]; do
            n=$((n + 1))
            if [ $n -gt 600 ] || ! kill -0 "$p" 2>/dev/null; then
                echo "rack controller $q did not start:" >&2
                cat "$WORK/rack$q.err" >&2
                # shellcheck disable=SC2086
                kill $rpids 2>/dev/null
                return 1
            fi
            sleep 0.05
        done
        port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/rack$q.err" | head -1)
        echo "http://127.0.0.1:$port $(cat "$WORK/rack$q.token")" >> "$WORK/children"
        q=$((q + 1))
    done
    chmod 600 "$WORK/children"
    sleep 2 # every rack past its first period (the full read of its agents)
    : > "$WORK/sched"
    ticks="" j=0
    while [ $((3 * j)) -lt "$PERIODS" ]; do
        s=$((2 + 3 * j))
        echo "$s $((s + 3)) $(echo "30 10 40 20" | cut -d' ' -f$((j % 4 + 1)))%" >> "$WORK/sched"
        ticks="$ticks${ticks:+,}$s"
        j=$((j + 1))
    done
    # the site's ticks BENCH_LEAD s (0.3) ahead of the earliest rack's
    lead=${BENCH_LEAD:-0.3}
    # shellcheck disable=SC2086
    /usr/bin/python3 "$SRC/bench/control_hier.py" --lead "$lead" $dbs
    # the site's lines stamped as they come (each printed once its PUTs are answered)
    rm -f "$WORK/site.fifo"
    mkfifo "$WORK/site.fifo" || return 1
    /usr/bin/python3 -u -c 'import sys, time
for l in sys.stdin:
    print("%.6f %s" % (time.time(), l), end="", flush=True)' < "$WORK/site.fifo" > "$WORK/site.out" &
    stamper=$!
    "$BUILD/pfi" control --children "$WORK/children" --schedule "$WORK/sched" --period 1 \
        --run-for $run > "$WORK/site.fifo" 2> "$WORK/site.err" &
    site=$!
    # CPU from the site's tick 0.5 to tick run - 0.5 (run - 1 periods), every process alive
    sleep 0.5
    : > "$WORK/cpu0"
    echo "site $(cpu_s $site)" >> "$WORK/cpu0"
    q=0
    for p in $rpids; do echo "rack$q $(cpu_s "$p")" >> "$WORK/cpu0"; q=$((q + 1)); done
    sleep $((run - 1))
    : > "$WORK/cpu"
    # shellcheck disable=SC2086
    set -- $site $rpids
    for name in site $(q=0; while [ $q -lt "$racks" ]; do echo rack$q; q=$((q + 1)); done); do
        c1=$(cpu_s "$1")
        c0=$(awk -v n="$name" '$1 == n { print $2 }' "$WORK/cpu0")
        hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$1/status" 2>/dev/null)
        echo "$name $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.6f", b - a }') $((run - 1)) ${hwm:-0}" \
            >> "$WORK/cpu"
        shift
    done
    wait $site
    src=$?
    wait $stamper
    [ $src -eq 0 ] || { echo "the site controller exited $src:" >&2; tail -5 "$WORK/site.err" >&2; }
    # shellcheck disable=SC2086
    kill -TERM $rpids 2>/dev/null
    for p in $rpids; do wait "$p" 2>/dev/null; done
    # shellcheck disable=SC2086
    BENCH_LEAD=$lead /usr/bin/python3 "$SRC/bench/control_hier.py" "2-level $kind" "$N" \
        $((N * 8)) "$WORK/site.out" \
        "$ticks" "$WORK/cpu" $dbs
    rc=$?
    [ $src -eq 0 ] && return $rc
    return 1
}

status=0
for kind in $KINDS; do
    t0=$(date +%s)
    start_agents "$kind" || exit 1
    if [ "$kind" = pfid ]; then
        what="$N pfid processes"
    else
        what="the in-process stand-in (bench/agent_farm: $N pfid agents in one process)"
    fi
    echo "bench/control: $what (emulated, 8 GPUs each, sampling every $PFI_AGENT_INTERVAL)" \
        "started in $(($(date +%s) - t0)) s; their memory: $((rss / 1024)) MiB resident in all," \
        "$((rss / N)) KiB each; cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "controller: pfi_ctl_step, period 1 s$([ "${BENCH_PACE:-1}" = 0 ] && echo ' (back to back)')," \
        "$PERIODS periods, a budget change every third"
    printf '%-14s %7s %6s %12s %12s %10s %10s %9s %8s\n' run agents GPUs "change max" \
        "change med" "CPU med" "CPU max" "RSS MiB" unconf
    printf '%-14s %7s %6s %12s %12s %10s %10s %9s %8s\n' "" "" "" "(ms)" "(ms)" "(ms)" "(ms)" "" ""
    for s in $SIZES; do
        if [ -n "${BENCH_BASE:-}" ]; then
            "$BENCH_BASE" "$WORK/agents" "$PERIODS" "$s" - "base $kind" || status=1
        fi
        if [ "${BENCH_CURL:-0}" = 1 ]; then
            BENCH_HTTP=curl "$BUILD/bench/control_bench" "$WORK/agents" "$PERIODS" "$s" - \
                "curl $kind" || status=1
        fi
        ${BENCH_WRAP:-} "$BUILD/bench/control_bench" "$WORK/agents" "$PERIODS" "$s" - \
            "flat $kind" || status=1
        if [ "${BENCH_AUDIT:-0}" = 1 ]; then
            rm -f "$WORK/audit.db"
            "$BUILD/bench/control_bench" "$WORK/agents" "$PERIODS" "$s" "$WORK/audit.db" \
                "audit $kind" || status=1
        fi
    done
    racks=${BENCH_RACKS:-8}
    if [ "$racks" -gt 1 ] && [ "${BENCH_STANDIN:-0}" = 1 ]; then
        ${BENCH_WRAP:-} "$BUILD/bench/control_bench" "$WORK/agents" "$PERIODS" "$N" - \
            "2-lvl-standin" "$racks" || status=1
    fi
    if [ "$racks" -gt 1 ]; then
        hier_real "$kind" "$racks" || status=1
    fi
    cluster_cleanup
    k=1
    while [ $k -le "$N" ]; do rm -rf "$WORK/agent.n$k" "$WORK/agent.n$k.log"; k=$((k + 1)); done
done
echo "goals at 1000 agents: change max <= 500 ms, CPU per period <= 50 ms"
exit $status
