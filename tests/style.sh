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
echo "style: no banned calls"
