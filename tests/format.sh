#!/bin/sh
# Every C source and header is formatted as .clang-format says: lists the files that are not
# (with the first lines of the difference) and fails. Fix with: clang-format -i FILE
# Usage: format.sh SOURCE_DIR
set -u
cd "$1" || exit 1
command -v clang-format >/dev/null || { echo "format: clang-format not found (scripts/deps.sh installs it)"; exit 1; }
bad=0
for f in $(find src include tests bench -name '*.[ch]' ! -path 'tests/fuzz/corpus/*' | sort); do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f"
        clang-format "$f" | diff "$f" - | head -8
        bad=$((bad + 1))
    fi
done
if [ "$bad" -gt 0 ]; then
    echo "format: $bad file(s) differ from .clang-format (clang-format -i FILE)"
    exit 1
fi
echo "format: $(find src include tests bench -name '*.[ch]' ! -path 'tests/fuzz/corpus/*' | wc -l) files formatted"
