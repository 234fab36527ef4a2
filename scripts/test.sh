#!/bin/sh
# Build pfi twice — a normal build and an AddressSanitizer + UndefinedBehaviorSanitizer
# build — and run every test in both. Installs missing Debian packages first (needs root).
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DPFI_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
echo "pfi: all tests passed (normal and sanitizer builds)"
