#!/bin/sh
# cmake --install into a temporary prefix: the programs, libpfi (static and shared, with its
# soname links), every public header, pfi.pc, pfid's systemd unit and example configuration,
# the data and any man pages are there; and a small program builds against the installed
# library with `pkg-config --cflags --libs pfi` (shared) and `--static` (libpfi.a), and runs.
# Usage: install.sh CMAKE PKG_CONFIG CC BUILD_DIR SOURCE_DIR BINDIR LIBDIR INCLUDEDIR DATADIR
#                   DOCDIR MANDIR [CFLAGS]
# (the GNUInstallDirs directories, relative to the prefix; CFLAGS for the program: the
# sanitizer flags when libpfi is built with them)
set -u
cmake=$1 pkgconfig=$2 cc=$3 build=$4 src=$5
bindir=$6 libdir=$7 includedir=$8 datadir=$9
shift 9
docdir=$1 mandir=$2 cflags=${3:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail=0
bad() {
    echo "install: $*"
    fail=1
}

if ! "$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    bad "cmake --install failed"
    exit 1
fi

for f in "$bindir/pfi" "$bindir/pfid"; do
    [ -x "$prefix/$f" ] || bad "$f is not installed (or not executable)"
done
for f in "$libdir/libpfi.a" "$libdir/libpfi.so.0" "$libdir/libpfi.so" "$libdir/pkgconfig/pfi.pc" \
    lib/systemd/system/pfid.service "$docdir/examples/pfid.conf" "$datadir/pfi/data" \
    lib/systemd/system/pfi-control.service "$docdir/examples/pfi-control.conf"; do
    [ -e "$prefix/$f" ] || bad "$f is not installed"
done
[ -L "$prefix/$libdir/libpfi.so" ] || bad "$libdir/libpfi.so is not the link to libpfi.so.0"
soname=$(objdump -p "$prefix/$libdir/libpfi.so.0" 2>/dev/null | awk '$1 == "SONAME" {print $2}')
[ "$soname" = libpfi.so.0 ] || bad "the installed libpfi.so.0 has SONAME '$soname'"
for h in "$src"/include/pfi/*.h; do
    cmp -s "$h" "$prefix/$includedir/pfi/${h##*/}" || bad "$includedir/pfi/${h##*/} is not installed"
done
for u in pfid pfi-control; do
    cmp -s "$src/examples/$u.service" "$prefix/lib/systemd/system/$u.service" ||
        bad "lib/systemd/system/$u.service is not examples/$u.service"
done
for m in "$build"/man/man*/*.[158]; do
    [ -e "$m" ] || { bad "no man pages in $build/man"; break; }
    s=${m##*.}
    [ -f "$prefix/$mandir/man$s/${m##*/}" ] || bad "$mandir/man$s/${m##*/} is not installed"
done
for c in pfi pfid; do
    [ -f "$prefix/$datadir/bash-completion/completions/$c" ] || bad "no bash completion for $c"
done

# A user of the library: the umbrella header, a function, and the normal generator, whose
# inline fast path reads the exported ziggurat tables that pfi_rng_seed fills in the library
# (so a broken data export shows as a wrong draw).
cat > "$tmp/user.c" <<'C'
#include <pfi/pfi.h>
#include <stdio.h>

int main(void)
{
    pfi_rng r;
    pfi_rng_seed(&r, 42, 0);
    double sum = 0;
    for (int i = 0; i < 1000; i++)
        sum += pfi_rng_normal(&r);
    printf("%s|%.17g\n", pfi_strerror(PFI_ERR_NOMEM), sum);
    return 0;
}
C
PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
version=$("$pkgconfig" --modversion pfi) || bad "pkg-config does not find the installed pfi.pc"
flags=$("$pkgconfig" --cflags --libs pfi)
static_flags=$("$pkgconfig" --static --cflags --libs pfi | sed 's/-lpfi\( \|$\)/-l:libpfi.a\1/')
# shellcheck disable=SC2086
if ! "$cc" -std=c11 -Wall -Wextra -Werror $cflags "$tmp/user.c" $flags -o "$tmp/user_shared"; then
    bad "a program does not build with: $pkgconfig --cflags --libs pfi ($flags)"
    exit 1
fi
# shellcheck disable=SC2086
if ! "$cc" -std=c11 -Wall -Wextra -Werror $cflags "$tmp/user.c" $static_flags -o "$tmp/user_static"; then
    bad "a program does not build against libpfi.a with: $pkgconfig --static ($static_flags)"
    exit 1
fi
objdump -p "$tmp/user_shared" | grep -q 'NEEDED *libpfi\.so\.0' ||
    bad "the program built with pkg-config --libs does not load libpfi.so.0"
objdump -p "$tmp/user_static" | grep -q 'NEEDED *libpfi\.so' &&
    bad "the program built against libpfi.a loads libpfi.so"
shared_out=$(LD_LIBRARY_PATH=$prefix/$libdir "$tmp/user_shared") || bad "the program linked to libpfi.so.0 fails"
static_out=$("$tmp/user_static") || bad "the program linked to libpfi.a fails"
case $shared_out in
"out of memory|"*) ;;
*) bad "the program linked to libpfi.so.0 printed '$shared_out'" ;;
esac
[ "$shared_out" = "$static_out" ] ||
    bad "shared and static libpfi disagree: '$shared_out' and '$static_out'"
[ "$fail" = 0 ] && echo "install: all there; pfi $version builds shared and static via pkg-config ($shared_out)"
exit "$fail"
