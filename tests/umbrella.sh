#!/bin/sh
# pfi/pfi.h, the umbrella header: it includes every header in include/pfi, and a C file that
# includes it alone compiles cleanly (strict C11, -Wall -Wextra -Wpedantic -Werror).
# Usage: umbrella.sh CC SOURCE_DIR
set -u
cc=$1 src=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
umbrella=$src/include/pfi/pfi.h
fail=0

missing=""
for h in "$src"/include/pfi/*.h; do
    name=${h##*/}
    [ "$name" = pfi.h ] && continue
    grep -Eq "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]pfi/$name[\">]" "$umbrella" ||
        missing="$missing $name"
done
if [ -n "$missing" ]; then
    echo "include/pfi/pfi.h does not include these public headers (add them):"
    for m in $missing; do echo "  #include \"pfi/$m\""; done
    fail=1
fi

cat > "$tmp/only_umbrella.c" <<'C'
#include "pfi/pfi.h"

int main(void)
{
    return pfi_strerror(PFI_OK) == NULL;
}
C
if ! "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$src/include" -c "$tmp/only_umbrella.c" \
    -o "$tmp/only_umbrella.o"; then
    echo "a C file including only pfi/pfi.h does not compile cleanly (above)"
    fail=1
fi
n=$(($(ls "$src"/include/pfi/*.h | wc -l) - 1))
[ "$fail" = 0 ] && echo "umbrella: pfi/pfi.h includes the $n other public headers and compiles alone"
exit "$fail"
