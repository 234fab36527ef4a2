#!/bin/sh
# The shared libpfi exports exactly the public API: every function and object declared in
# include/pfi/*.h, nothing else (src/lib/libpfi.map is the list the linker keeps).
# Usage: symbols.sh GCC LIBPFI_SO SOURCE_DIR
# GCC is a gcc: its -aux-info lists the functions the public headers declare, with the header
# each comes from, after the preprocessor (static inline helpers are not exported and are
# not required). Objects are the headers' one-line `extern TYPE name[...];` declarations.
set -u
cc=$1 so=$2 src=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

soname=$(objdump -p "$so" | awk '$1 == "SONAME" {print $2}')
if [ "$soname" != libpfi.so.0 ]; then
    echo "SONAME of $so is '$soname', not libpfi.so.0"
    fail=1
fi

for h in "$src"/include/pfi/*.h; do
    echo "#include \"pfi/${h##*/}\""
done > "$tmp/all.c"
if ! "$cc" -std=c11 -I"$src/include" -aux-info "$tmp/aux" -c "$tmp/all.c" -o "$tmp/all.o"; then
    echo "the public headers do not compile together"
    exit 1
fi
perl -ne 'print "$1\n" if m{/include/pfi/[^:/]+\.h:\d+:\w+ \*/ extern .*?\b([A-Za-z_]\w*) \((?!\*)}' \
    "$tmp/aux" > "$tmp/functions"
perl -ne 'print "$1\n" if /^extern\s[^("]*?\b([A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)*;/' \
    "$src"/include/pfi/*.h > "$tmp/objects"
sort -u "$tmp/functions" "$tmp/objects" > "$tmp/public"
if [ "$(wc -l < "$tmp/functions")" -lt 100 ]; then
    echo "only $(wc -l < "$tmp/functions") public functions found: the -aux-info parse is broken"
    exit 1
fi

# nm -D: "ADDRESS TYPE NAME@@PFI_0"; the version node itself is an absolute symbol (A)
nm -D --defined-only "$so" | awk '$2 != "A" {sub(/@.*/, "", $3); print $3}' | sort -u \
    > "$tmp/exported"

extra=$(comm -13 "$tmp/public" "$tmp/exported")
if [ -n "$extra" ]; then
    echo "exported by $so but declared in no include/pfi header (remove them from"
    echo "src/lib/libpfi.map, or declare them in the public header they belong to):"
    echo "$extra" | sed 's/^/  /'
    fail=1
fi
missing=$(comm -23 "$tmp/public" "$tmp/exported")
if [ -n "$missing" ]; then
    echo "declared in include/pfi but not exported by $so (add them to src/lib/libpfi.map,"
    echo "or define them):"
    echo "$missing" | sed 's/^/  /'
    fail=1
fi
[ "$fail" = 0 ] && echo "symbols: $(wc -l < "$tmp/exported") exported, all public, every public one exported"
exit "$fail"
