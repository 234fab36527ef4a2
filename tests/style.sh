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
echo "style: no banned calls"
