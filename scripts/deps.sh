#!/bin/sh
# Install the Debian 12 packages pfi needs to build, test and benchmark (as root; skips what
# is already installed). pfid: libmicrohttpd-dev; its tests: curl, prometheus (promtool and
# the scrape test); bench/ingest: python3-pandas and GNU time (time). libxml2 (the nvidia-smi
# XML reader), libcurl (pfi control),
# libmicrohttpd (the HTTP server of pfid and pfi control --listen) and PLplot (figures) are
# opened with dlopen on first use, not linked: their -dev packages give the headers, and the
# runtime packages (libxml2, libcurl4, libmicrohttpd12, libplplot17 with its cairo driver
# plplot-driver-cairo) are listed themselves, since no binary's link names them. The Debian
# packages (tests/package.sh): dpkg-dev, debhelper, lintian; the man pages' lint: mandoc.
# Slurm (slurmctld, slurmd, slurm-client, munge; libslurm-dev for spank.h): the tests/slurm
# tests start a single-node Slurm, and the SPANK plugin pfi_spank.so builds against spank.h.
set -eu
PACKAGES="cmake make gcc clang clang-format libclang-rt-14-dev pkg-config libgsl-dev libjansson-dev
libplplot-dev libplplot17 plplot-driver-cairo libcsv-dev libcmocka-dev libsqlite3-dev libpcre2-dev
libxml2-dev libxml2 libcurl4-openssl-dev libcurl4 libmicrohttpd-dev libmicrohttpd12 curl
prometheus sqlite3 python3-numpy python3-scipy python3-pandas time locales
dpkg-dev debhelper lintian mandoc
slurmctld slurmd slurm-client munge libslurm-dev slurm-wlm-basic-plugins"
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "pfi: installing:$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# The locale tests run under a decimal-comma locale; generate it if it is not there.
if ! locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$'; then
    sed -i 's/^# *\(de_DE.UTF-8 UTF-8\)/\1/' /etc/locale.gen
    grep -q '^de_DE.UTF-8 UTF-8' /etc/locale.gen || echo 'de_DE.UTF-8 UTF-8' >> /etc/locale.gen
    locale-gen >/dev/null
fi
