#!/bin/sh
# pfi --version, pfi version and pfid --version print the one version CMakeLists.txt's
# project() sets (and debian/changelog's upstream version is the same); each exits 3 when
# standard output cannot be written.
# Usage: version.sh PFI PFID SOURCE_DIR
set -u
pfi=$1 pfid=$2 src=$3
fail=0
bad() {
    echo "version: $*"
    fail=1
}
want=$(sed -n 's/^project(pfi VERSION \([0-9.]*\) .*/\1/p' "$src/CMakeLists.txt")
[ -n "$want" ] || bad "no project(pfi VERSION ...) in CMakeLists.txt"
for cmd in "$pfi --version" "$pfi version" "$pfid --version"; do
    out=$($cmd) || bad "$cmd exits $?"
    name=${cmd%% *}
    name=${name##*/}
    [ "$out" = "$name $want" ] || bad "$cmd printed '$out', not '$name $want'"
    $cmd > /dev/full 2> /dev/null
    rc=$?
    [ "$rc" = 3 ] || bad "$cmd > /dev/full exits $rc, not 3"
done
if [ -f "$src/debian/changelog" ]; then
    deb=$(sed -n '1s/^pfi (\([^)-]*\)-[^)]*).*/\1/p' "$src/debian/changelog")
    [ "$deb" = "$want" ] || bad "debian/changelog's upstream version is '$deb', CMake's '$want'"
fi
[ "$fail" = 0 ] && echo "version: pfi and pfid print $want"
exit "$fail"
