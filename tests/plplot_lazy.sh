#!/bin/sh
# The libraries opened on first use are not linked (PLplot, libmicrohttpd, libcurl, libxml2,
# NVML); PLplot is opened with dlopen on the first figure (src/lib/plot/plplot_lazy.c):
# pfi and pfid do not name it; without a loadable libplplot.so.17 the commands that draw
# nothing run as before, and a figure fails with a message naming the library and why,
# leaving no file behind.
# Usage: plplot_lazy.sh PFI_BINARY PFID_BINARY OTHER_SHARED_LIBRARY
# (OTHER_SHARED_LIBRARY: any shared object without PLplot's symbols, to stand in for it)
set -u
PFI=$1 PFID=$2 OTHER=$3
T=$(mktemp -d /tmp/pfi-plplot-lazy.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

# None of the five libraries opened on first use is linked: PLplot, libmicrohttpd, libcurl,
# libxml2, NVML (README, Quick start).
for b in "$PFI" "$PFID"; do
    for lib in libplplot libmicrohttpd libcurl libxml2 libnvidia-ml; do
        if objdump -p "$b" | grep -q "NEEDED.*$lib"; then
            bad "$(basename "$b") links $lib"
        else
            ok "$(basename "$b") does not link $lib"
        fi
    done
done

sim() { "$PFI" simulate --workloads 4 --jobs 6 --quiet "$@"; }

# figure FAKE_DIR WHAT EXPECTED_REASON: a figure with that directory first on the search path
figure() {
    mkdir -p "$T/out"
    LD_LIBRARY_PATH=$1 sim >/dev/null 2>"$T/err"
    if [ $? -eq 0 ]; then ok "$2: pfi simulate without a figure runs"; else bad "$2: pfi simulate fails"; cat "$T/err"; fi
    LD_LIBRARY_PATH=$1 sim --plot-gap "$T/out/gap.png" >/dev/null 2>"$T/err"
    rc=$?
    if [ $rc -ne 0 ] &&
        grep -q "figures need PLplot (libplplot.so.17), which cannot be loaded: .*$3" "$T/err"; then
        ok "$2: the figure fails (exit $rc) naming the library: $(cat "$T/err")"
    else
        bad "$2: exit $rc, message: $(cat "$T/err")"
    fi
    if [ -n "$(ls -A "$T/out")" ]; then bad "$2: left $(ls -A "$T/out")"; else ok "$2: nothing left behind"; fi
    rm -rf "$T/out"
}

mkdir "$T/notelf"
echo "not a shared object" > "$T/notelf/libplplot.so.17"
figure "$T/notelf" "not a library" "libplplot.so.17"
mkdir "$T/other"
cp "$OTHER" "$T/other/libplplot.so.17"
figure "$T/other" "a library without PLplot's functions" "libplplot.so.17 lacks c_pladv"

# and with the real one, a figure is drawn (the figure tests check what it looks like)
if sim --plot-gap "$T/gap.png" >/dev/null 2>"$T/err" && [ -s "$T/gap.png" ]; then
    ok "with PLplot installed, the figure is drawn"
else
    bad "with PLplot installed: $(cat "$T/err")"
fi
# libcurl the same way: pfi control without a loadable libcurl.so.4 says so, naming it
mkdir -p "$T/nocurl"
printf 'not a library' >"$T/nocurl/libcurl.so.4"
printf 'http://127.0.0.1:1\n' >"$T/agents"
LD_LIBRARY_PATH=$T/nocurl "$PFI" control --agents "$T/agents" --budget-w 1000 --run-for 1 \
    >/dev/null 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && grep -q 'needs libcurl (libcurl.so.4), which cannot be loaded: .*file too short' "$T/err"; then
    ok "pfi control without libcurl: exit $rc, $(cat "$T/err")"
else
    bad "pfi control without libcurl: exit $rc, message: $(cat "$T/err")"
fi

exit $fail
