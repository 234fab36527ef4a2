#!/bin/sh
# The Debian packages, built, installed and purged on this machine: dpkg-buildpackage -us -uc
# -b in a copy of the source tree (a temporary folder, 2 jobs, ccache when there is one);
# lintian on the result (an error or a warning not explained in debian/README.source
# fails); dpkg -i of pfi, pfid, libpfi0 and libpfi-dev; pfi --version and pfid --version
# print project()'s version; pfid --check accepts the installed /etc/pfid/pfid.conf, as root
# and as the pfi user the unit runs as; the unit, man pages and completion are where systemd,
# man and bash look; a program builds against the installed libpfi-dev; dpkg --purge leaves
# none of the packages' files, /etc/pfid or /var/lib/pfid behind.
# Skipped (77) without dpkg-buildpackage, debhelper or lintian (scripts/deps.sh installs
# them), when not root, and when a pfi package is installed already (not to replace it).
# Usage: package.sh SOURCE_DIR CC
set -u
src=$1 cc=${2:-cc}
skip() {
    echo "package: skipped: $*"
    exit 77
}
for t in dpkg-buildpackage dh lintian dpkg; do
    command -v "$t" > /dev/null 2>&1 || skip "$t is not installed (scripts/deps.sh: dpkg-dev debhelper lintian)"
done
[ "$(id -u)" = 0 ] || skip "dpkg -i needs root"
PKGS="pfi pfid libpfi0 libpfi-dev"
for p in $PKGS; do
    if dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q 'ok installed\|config-files'; then
        skip "package $p is installed on this machine already (dpkg --purge it to run this test)"
    fi
done

tmp=$(mktemp -d /tmp/pfi-package.XXXXXX) || exit 1
installed=0
cleanup() {
    [ "$installed" = 1 ] && dpkg_locked --purge $PKGS > /dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail=0
bad() {
    echo "package: $*"
    fail=1
}

# dpkg, waiting (bounded: 120 s) while another dpkg or apt holds its lock
dpkg_locked() {
    n=0
    while :; do
        dpkg "$@" > "$tmp/dpkg.out" 2>&1 && { cat "$tmp/dpkg.out"; return 0; }
        grep -q 'frontend lock\|database is locked\|lock-frontend' "$tmp/dpkg.out" || { cat "$tmp/dpkg.out"; return 1; }
        n=$((n + 1))
        [ $n -ge 120 ] && { cat "$tmp/dpkg.out"; return 1; }
        sleep 1
    done
}

version=$(sed -n 's/^project(pfi VERSION \([0-9.]*\) .*/\1/p' "$src/CMakeLists.txt")
# the tree as committed plus what git does not ignore (no build folders); without git, all
# but build*/
tree=$tmp/pfi-$version
mkdir -p "$tree"
if git -C "$src" rev-parse --git-dir > /dev/null 2>&1; then
    (cd "$src" && git ls-files -co --exclude-standard -z | xargs -0 tar cf - 2> /dev/null) |
        (cd "$tree" && tar xf -)
else
    (cd "$src" && tar cf - --exclude='./build*' .) | (cd "$tree" && tar xf -)
fi
[ -f "$tree/debian/rules" ] || { bad "the copy of the tree has no debian/rules"; exit 1; }

start=$(date +%s)
if command -v ccache > /dev/null 2>&1; then
    # debhelper maps the build path away (-ffile-prefix-map); ccache needs not hash it
    export CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$tmp CCACHE_NOHASHDIR=1
fi
if ! (cd "$tree" && DEB_BUILD_OPTIONS="parallel=2 nocheck" dpkg-buildpackage -us -uc -b) \
    > "$tmp/build.log" 2>&1; then
    tail -40 "$tmp/build.log"
    bad "dpkg-buildpackage -us -uc -b failed"
    exit 1
fi
echo "package: built in $(($(date +%s) - start)) s"
# the installed files alone from here on (no build tree to fall back on)
rm -rf "$tree"
arch=$(dpkg --print-architecture)
debs=""
for p in $PKGS; do
    f=$tmp/${p}_${version}-1_$arch.deb
    [ -f "$f" ] || bad "no $p package (${f##*/})"
    debs="$debs $f"
done
[ "$fail" = 0 ] || exit 1

# lintian: errors and warnings fail unless debian/README.source explains the tag
lintian -I --tag-display-limit 0 "$tmp"/pfi_"$version"-1_"$arch".changes > "$tmp/lintian.log" 2>&1
grep -v 'running with root privileges' "$tmp/lintian.log" | sed 's/^/package: lintian: /'
for tag in $(sed -n 's/^[EW]: [^ ]*: \([a-z0-9-]*\).*/\1/p' "$tmp/lintian.log" | sort -u); do
    grep -q "^ *- $tag:" "$src/debian/README.source" ||
        bad "lintian tag $tag is not explained in debian/README.source"
done

# shellcheck disable=SC2086
if ! dpkg_locked -i $debs > "$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    installed=1
    bad "dpkg -i failed"
    exit 1
fi
installed=1
for p in $PKGS; do
    dpkg -L "$p" > "$tmp/files.$p" || bad "dpkg -L $p"
done

out=$(/usr/bin/pfi --version) || bad "pfi --version exits $?"
[ "$out" = "pfi $version" ] || bad "pfi --version printed '$out'"
out=$(/usr/bin/pfid --version) || bad "pfid --version exits $?"
[ "$out" = "pfid $version" ] || bad "pfid --version printed '$out'"
[ -f /etc/pfid/pfid.conf ] || bad "no /etc/pfid/pfid.conf"
grep -qx /etc/pfid/pfid.conf /var/lib/dpkg/info/pfid.conffiles 2> /dev/null ||
    bad "/etc/pfid/pfid.conf is not a conffile of pfid"
# pfid --check wants the journal's directory: the package's postinst makes it, owned by pfi
[ -d /var/lib/pfid ] && [ "$(stat -c %U:%a /var/lib/pfid)" = pfi:700 ] ||
    bad "postinst did not make /var/lib/pfid (pfi, 700)"
/usr/bin/pfid --check --config /etc/pfid/pfid.conf > "$tmp/check.log" 2>&1 ||
    { cat "$tmp/check.log"; bad "pfid --check on the installed config fails (root)"; }
getent passwd pfi > /dev/null || bad "no pfi system user"
if command -v setpriv > /dev/null 2>&1; then
    setpriv --reuid=pfi --regid=pfi --init-groups /usr/bin/pfid --check --config /etc/pfid/pfid.conf \
        > "$tmp/check.log" 2>&1 ||
        { cat "$tmp/check.log"; bad "pfid --check on the installed config fails as the pfi user"; }
fi
# pfi control as a service: its unit and default config in the pfi package; the config
# parses (--check stops only at the files an operator provides: the agents file)
[ -f /etc/pfi/control.conf ] && grep -qx /etc/pfi/control.conf /var/lib/dpkg/info/pfi.conffiles ||
    bad "/etc/pfi/control.conf is not a conffile of pfi"
cunit=$(grep '/pfi-control\.service$' "$tmp/files.pfi" | head -1)
[ -n "$cunit" ] && [ -f "$cunit" ] || bad "pfi ships no pfi-control.service"
if [ -n "$cunit" ]; then
    grep -qx 'User=pfi' "$cunit" || bad "$cunit does not run pfi control as pfi"
    grep -qx 'ExecStart=/usr/bin/pfi control --config /etc/pfi/control.conf' "$cunit" ||
        bad "$cunit: ExecStart"
    grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' "$cunit" || bad "$cunit: ExecReload"
fi
/usr/bin/pfi control --config /etc/pfi/control.conf --check > "$tmp/ccheck.log" 2>&1
grep -q '^pfi: control: agents file: .*/etc/pfi/agents' "$tmp/ccheck.log" ||
    { cat "$tmp/ccheck.log"; bad "pfi control --check on the installed config"; }
unit=$(grep '/pfid\.service$' "$tmp/files.pfid" | head -1)
[ -n "$unit" ] && [ -f "$unit" ] || bad "pfid ships no pfid.service"
if [ -n "$unit" ]; then
    grep -qx 'User=pfi' "$unit" || bad "$unit does not run pfid as pfi"
    grep -qx 'ExecStart=/usr/bin/pfid --config /etc/pfid/pfid.conf' "$unit" || bad "$unit: ExecStart"
    for d in $(sed -n 's/^Documentation=//p' "$unit"); do
        case $d in
        man:*) page=${d#man:} ;;
        *) bad "$unit: Documentation=$d is not a man page"; continue ;;
        esac
        sec=${page#*(} sec=${sec%)} name=${page%%(*}
        ls /usr/share/man/man"$sec"/"$name"."$sec"* > /dev/null 2>&1 ||
            bad "$unit: Documentation=$d: no such installed page"
    done
fi
if [ -d "$src/docs/man" ]; then
    for m in pfi.1 pfi-ingest.1 pfid.8 pfid.conf.5; do
        s=${m##*.}
        [ -f "/usr/share/man/man$s/$m.gz" ] || bad "/usr/share/man/man$s/$m.gz is not installed"
    done
    for c in pfi pfid; do
        [ -f "/usr/share/bash-completion/completions/$c" ] || bad "no bash completion for $c"
    done
fi
for f in scripts/demo-cluster.sh prometheus/pfi-alerts.yml grafana/pfi.json; do
    [ -f "/usr/share/pfi/$f" ] || bad "/usr/share/pfi/$f is not installed"
done
# man pfi-ingest, as installed, shows the options of pfi ingest --help
if command -v mandoc > /dev/null 2>&1 && [ -f /usr/share/man/man1/pfi-ingest.1.gz ]; then
    optcol() { grep -E "^ {1,$1}-" | sed -E 's/^ +//; s/  .*//' | grep -oE -- '--?[A-Za-z][A-Za-z0-9-]*' | sort -u; }
    /usr/bin/pfi ingest --help | optcol 4 > "$tmp/help.opts"
    mandoc -Tascii -O width=1000 /usr/share/man/man1/pfi-ingest.1.gz | col -b |
        sed -n '/^OPTIONS/,/^[A-Z][A-Z ]*$/p' | optcol 7 > "$tmp/man.opts"
    if [ -s "$tmp/help.opts" ] && cmp -s "$tmp/help.opts" "$tmp/man.opts"; then
        echo "package: man pfi-ingest shows the $(wc -l < "$tmp/help.opts") options of pfi ingest --help"
    else
        diff "$tmp/help.opts" "$tmp/man.opts"
        bad "man pfi-ingest and pfi ingest --help differ in options"
    fi
fi
# the installed pfi runs its demo with the installed pfid (beside it) and script
if (cd "$tmp" && timeout 120 /usr/bin/pfi demo cluster --agents 2 --out "$tmp/demo") > "$tmp/demo.log" 2>&1 &&
    grep -q 'every GPU is back on its original limit' "$tmp/demo.log"; then
    echo "package: pfi demo cluster runs from the packages ($(grep -c '^==' "$tmp/demo.log") controller runs)"
else
    tail -20 "$tmp/demo.log"
    bad "pfi demo cluster from the packages failed"
fi

# a program against the installed libpfi-dev (libpfi.so.0 from libpfi0)
printf '#include <pfi/pfi.h>\n#include <stdio.h>\nint main(void){puts(pfi_strerror(PFI_ERR_NOMEM));return 0;}\n' \
    > "$tmp/user.c"
# shellcheck disable=SC2046
if "$cc" -std=c11 -Wall -Werror "$tmp/user.c" $(pkg-config --cflags --libs pfi) -o "$tmp/user" 2> "$tmp/cc.log"; then
    "$tmp/user" > /dev/null || bad "a program linked to the installed libpfi.so.0 fails"
    objdump -p "$tmp/user" | grep -q 'NEEDED *libpfi\.so\.0' || bad "the program does not load libpfi.so.0"
else
    cat "$tmp/cc.log"
    bad "a program does not build against libpfi-dev (pkg-config --cflags --libs pfi)"
fi
[ "$(pkg-config --modversion pfi 2> /dev/null)" = "$version" ] || bad "pkg-config --modversion pfi"

# dpkg --purge: every file gone, and the agent's folders
# shellcheck disable=SC2086
if ! dpkg_locked --purge $PKGS > "$tmp/purge.log" 2>&1; then
    cat "$tmp/purge.log"
    bad "dpkg --purge failed"
fi
installed=0
for p in $PKGS; do
    st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2> /dev/null)
    case $st in
    "" | not-installed) ;;
    *) bad "$p is '$st' after dpkg --purge" ;;
    esac
done
left=0
for p in $PKGS; do
    while IFS= read -r f; do
        [ -d "$f" ] && continue
        [ -e "$f" ] || [ -L "$f" ] || continue
        bad "$f (of $p) is left after dpkg --purge"
        left=$((left + 1))
    done < "$tmp/files.$p"
done
for d in /etc/pfid /var/lib/pfid /etc/pfi /var/lib/pfi-control; do
    [ -e "$d" ] && bad "$d is left after dpkg --purge"
done
n=$(cat "$tmp"/files.* | wc -l)
[ "$fail" = 0 ] && echo "package: $PKGS built, installed ($n paths), checked and purged (0 left)"
exit "$fail"
