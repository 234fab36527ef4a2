#!/bin/sh
# The rules machines check in the C sources: banned calls (unbounded or unchecked conversions
# and copies), allocation only through the hook, no getenv or relative include in the library,
# no backend kind named outside src/lib/hw, and includes that follow the layers of src/lib.
# Usage: style.sh SOURCE_DIR
set -u
cd "$1" || exit 1
found=$(grep -nE '\b(atoi|atol|atof|sprintf|vsprintf|strcpy|strcat|gets|strtok)\s*\(' \
    $(find src include -name '*.[ch]') | grep -v '^\s*//' || true)
if [ -n "$found" ]; then
    echo "banned calls (use strtol/strtod with checks, snprintf, memcpy with lengths):"
    echo "$found"
    exit 1
fi
# libpfi allocates through its replaceable allocator (pfi/memory.h, src/lib/core/memory.h):
# no direct malloc family anywhere in src/lib but core/memory.c, except a free() of a buffer
# another library allocated (realpath, open_memstream), marked with a comment that says libc.
raw=$(grep -nE '(^|[^_A-Za-z0-9.>])(malloc|calloc|realloc|strdup|strndup|free)\(' \
    $(find src/lib -name '*.[ch]' ! -path src/lib/core/memory.c) | grep -v 'libc' || true)
if [ -n "$raw" ]; then
    echo "direct allocation calls in libpfi (use pfi_malloc, pfi_free... from core/memory.h):"
    echo "$raw"
    exit 1
fi
# The library reads no environment (callers pass what it needs), and nothing reaches a
# header by a relative path (internal headers are named by room: "core/memory.h").
env=$(grep -rnE '\b(getenv|secure_getenv)\s*\(' src/lib || true)
if [ -n "$env" ]; then
    echo "getenv in libpfi (read the environment in src/cli or src/agent and pass the value):"
    echo "$env"
    exit 1
fi
rel=$(grep -rn '#include "\.\./' src include tests bench || true)
if [ -n "$rel" ]; then
    echo "relative includes (name internal headers by room, e.g. \"core/memory.h\"):"
    echo "$rel"
    exit 1
fi
# The library never prints or exits: the programs decide what to say and with which exit
# code (a forked child that failed to exec may _exit, on a line that says so).
say=$(grep -rnE '\b(printf|puts|perror|exit|abort|_exit)\s*\(|\bf(printf|puts)\s*\([^;]*\bstd(out|err)\b' \
    src/lib | grep -vE '^[^:]*:[0-9]+:\s*(/?\*|//)' | grep -v 'forked child' || true)
if [ -n "$say" ]; then
    echo "printing or exiting in libpfi (return a pfi_error with a pfi_diag message instead):"
    echo "$say"
    exit 1
fi
# Code outside src/lib/hw asks a backend for a capability, never which backend it is.
kind=$(grep -rnE 'PFI_GPU_(NVML|EMULATED|REPLAY)\b' src | grep -v '^src/lib/hw/' || true)
if [ -n "$kind" ]; then
    echo "backend kinds named outside src/lib/hw (ask pfi_gpu_caps / pfi_gpu_backend_caps):"
    echo "$kind"
    exit 1
fi
# --- layers: a room includes only the rooms below it (src/lib/ROOM/README.md says which) ---
# allowed ROOM: the rooms ROOM may include
allowed() {
    case $1 in
    core) echo "" ;;
    telemetry) echo "core" ;;
    analysis) echo "core telemetry" ;;
    stats) echo "core telemetry analysis" ;;
    power) echo "core telemetry analysis stats" ;;
    hw) echo "core stats" ;;
    sweep) echo "core telemetry analysis stats hw" ;;
    http) echo "core" ;;
    control) echo "core telemetry analysis stats power hw http" ;;
    plot) echo "core telemetry analysis stats power hw sweep control" ;;
    *) echo "?" ;;
    esac
}
# header_room NAME: the room that implements public header include/pfi/NAME.h
header_room() {
    case $1 in
    memory | error | value | csv | atomic_file | rng | quantile) echo core ;;
    telemetry | reduce | trainlog | kernlog | featmap) echo telemetry ;;
    runs | manifest | steady | index | groups | store) echo analysis ;;
    stats | fit | model | library) echo stats ;;
    curve | allocate | jobs | joblib | simulate) echo power ;;
    gpu | capctl) echo hw ;;
    sweep) echo sweep ;;
    control | control_files | stage | agent_api | audit) echo control ;;
    plot | plot_sim) echo plot ;;
    http) echo http ;;
    pfi) echo umbrella ;;
    *) echo "?" ;;
    esac
}
layers=""
for h in include/pfi/*.h; do
    n=$(basename "$h" .h)
    [ "$(header_room "$n")" = "?" ] && layers="$layers
include/pfi/$n.h: no room named for it in tests/style.sh (header_room)"
done
for d in src/lib/*/; do
    room=$(basename "$d")
    ok=$(allowed "$room")
    [ "$ok" = "?" ] && { layers="$layers
src/lib/$room: a room tests/style.sh does not know (allowed)"; continue; }
    for f in "$d"*.[ch]; do
        [ -f "$f" ] || continue
        for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
            case $inc in
            pfi/*) r=$(header_room "$(basename "$inc" .h)") ;;
            */*) r=${inc%%/*} ;;
            *) r=$room ;;
            esac
            [ "$r" = "$room" ] && continue
            case " $ok " in *" $r "*) continue ;; esac
            layers="$layers
$f: includes $inc (room $r); $room may include: ${ok:-nothing}"
        done
    done
done
if [ -n "$layers" ]; then
    echo "includes across the layers of src/lib (docs/architecture.md):$layers"
    exit 1
fi
echo "style: no banned calls, no printing, exit, getenv or relative include in the library, no backend kind outside hw, includes follow the layers"
