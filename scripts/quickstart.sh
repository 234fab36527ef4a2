#!/bin/sh
# Install what is missing, build pfi, and analyse the embedded datasets (the real LLM jobs of
# the Phoenix field demonstration first, then Zeus): the PFI of every sweep group with 95 %
# confidence intervals (assuming 1 % relative measurement noise, since the public traces were
# measured once) and a figure, pfi-curves.png.
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
./build/pfi analyze --noise-rel 0.01 --plot pfi-curves.png data/emerald_phoenix_2025 data/zeus_jit_profile data/zeus_nsdi23_power
echo "pfi: figure written to pfi-curves.png"
