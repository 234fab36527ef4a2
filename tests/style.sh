#!/bin/sh
# Banned calls in the project's C sources: unbounded or unchecked conversions and copies.
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
# libpfi allocates through its replaceable allocator (pfi/alloc.h, src/lib/alloc_internal.h):
# no direct malloc family in src/lib and src/hw but alloc.c, except a free() of a buffer another
# library allocated (realpath, open_memstream), marked with a comment that says libc.
raw=$(grep -nE '(^|[^_A-Za-z0-9.>])(malloc|calloc|realloc|strdup|strndup|free)\(' \
    $(find src/lib src/hw -name '*.[ch]' ! -name alloc.c) | grep -v 'libc' || true)
if [ -n "$raw" ]; then
    echo "direct allocation calls in libpfi (use pfi_malloc, pfi_free... from alloc_internal.h):"
    echo "$raw"
    exit 1
fi
echo "style: no banned calls"
