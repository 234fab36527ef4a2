#!/bin/sh
# The rules machines check in the C sources: banned calls (unbounded or unchecked conversions
# and copies), allocation only through the hook, no printing, exit or getenv in the library,
# no relative include, no backend named outside src/lib/hw, and includes that follow the
# layers of src/lib. Usage: style.sh SOURCE_DIR
set -u
cd "$1" || exit 1

# hits ERE FILE...: the lines that match, as file:line:text, less comment lines; exits the
# check (status 2) when grep itself fails (a bad pattern, a file that cannot be read), so
# that a broken check never passes
hits() {
    re=$1
    shift
    out=$(grep -nE "$re" "$@" /dev/null)
    rc=$?
    if [ $rc -gt 1 ]; then
        echo "style: grep failed (status $rc) on /$re/" >&2
        return 2
    fi
    printf '%s\n' "$out" | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(//|/\*|\*)' | grep . || true
}
# report TITLE LINES: print and fail when LINES is not empty
report() {
    [ -z "$2" ] && return 0
    echo "$1"
    echo "$2"
    exit 1
}
lib=$(find src/lib -name '*.[ch]' | sort)
all=$(find src include -name '*.[ch]' | sort)

# shellcheck disable=SC2086
found=$(hits '\b(atoi|atol|atof|sprintf|vsprintf|strcpy|strcat|gets|strtok)[[:space:]]*\(' $all) || exit 2
report "banned calls (use strtol/strtod with checks, snprintf, memcpy with lengths):" "$found"

# libpfi allocates through its replaceable allocator (pfi/memory.h, src/lib/core/memory.h):
# no direct malloc family anywhere in src/lib but core/memory.c, except a free() of a buffer
# another library allocated with the C library's malloc (realpath), marked "libc's malloc".
# shellcheck disable=SC2086
raw=$(hits '(^|[^_A-Za-z0-9.>])(malloc|calloc|realloc|strdup|strndup|free)\(' \
    $(echo "$lib" | grep -v '^src/lib/core/memory.c$')) || exit 2
raw=$(printf '%s\n' "$raw" | grep -v "libc's malloc" | grep . || true)
report "direct allocation calls in libpfi (use pfi_malloc, pfi_free... from core/memory.h):" "$raw"

# The library reads no environment (callers pass what it needs), and nothing reaches a
# header by a relative path (internal headers are named by room: "core/memory.h").
# shellcheck disable=SC2086
env=$(hits '\b(getenv|secure_getenv)[[:space:]]*\(' $lib) || exit 2
report "getenv in libpfi (read the environment in src/cli or src/agent and pass the value):" "$env"
# shellcheck disable=SC2086
rel=$(hits '#[[:space:]]*include[[:space:]]*[<"]\.\./' $all $(find tests bench -name '*.[ch]' ! -path 'tests/fuzz/corpus/*')) || exit 2
report "relative includes (name internal headers by room, e.g. \"core/memory.h\"):" "$rel"

# The library never prints or exits: the programs decide what to say and with which exit
# code. Writing to a stream a caller passed is fine; naming stdout or stderr is not (a forked
# child that failed to exec may _exit, on a line that says so).
# shellcheck disable=SC2086
say=$(hits '\b(printf|vprintf|puts|putchar|perror|exit|abort|_exit)[[:space:]]*\(' $lib) || exit 2
say=$(printf '%s\n' "$say" | grep -v 'forked child' | grep . || true)
# shellcheck disable=SC2086
std=$(hits '\bstd(out|err)\b' $lib) || exit 2
std=$(printf '%s\n' "$std" | sed -e 's|/\*.*\*/||g' -e 's|//.*||' |
    grep -E '^[^:]+:[0-9]+:.*\bstd(out|err)\b' || true)
say=$(printf '%s\n%s\n' "$say" "$std" | grep . || true)
report "printing or exiting in libpfi (return a pfi_error with a pfi_diag message instead):" "$say"

# Code outside src/lib/hw asks a backend for a capability, never which backend it is: no
# backend kind constant, no backend name compared with a string.
# shellcheck disable=SC2086
kind=$(hits 'PFI_GPU_(NVML|EMULATED|REPLAY)\b' $(echo "$all" | grep '^src/' | grep -v '^src/lib/hw/')) || exit 2
# shellcheck disable=SC2086
name=$(hits '"(nvml|emulated|replay)"' $(echo "$lib" | grep -v '^src/lib/hw/')) || exit 2
kind=$(printf '%s\n%s\n' "$kind" "$name" | grep . || true)
report "backends named outside src/lib/hw (ask pfi_gpu_caps / pfi_gpu_backend_caps):" "$kind"
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
    memory | error | value | conf | csv | atomic_file | rng | quantile) echo core ;;
    telemetry | reduce | trainlog | kernlog | featmap) echo telemetry ;;
    runs | manifest | steady | index | groups | store) echo analysis ;;
    stats | fit | model | library) echo stats ;;
    curve | allocate | jobs | joblib | simulate | topology) echo power ;;
    gpu | capctl) echo hw ;;
    sweep) echo sweep ;;
    control | control_files | stage | agent_api | audit | grid | slurm | openadr) echo control ;;
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
        for inc in $(sed -n -e 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
            -e 's/^#[[:space:]]*include[[:space:]]*<\(pfi\/[^>]*\)>.*/\1/p' "$f"); do
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
echo "style: no banned calls; no printing, exit, getenv or direct allocation in the library; no relative include; no backend named outside hw; includes follow the layers"
