#!/bin/sh
# End-to-end tests of the pfi command. Usage: run.sh PFI_BINARY SOURCE_DIR
set -u
PFI=$1
SRC=$2
fail=0
check() { # check NAME EXPECTED_EXIT COMMAND...
    name=$1; want=$2; shift 2
    "$@" >/tmp/pfi-cli-out.$$ 2>/tmp/pfi-cli-err.$$
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL $name: exit $got, want $want"; cat /tmp/pfi-cli-err.$$; fail=1
    else
        echo "ok   $name"
    fi
}
check help 0 "$PFI" --help
check analyze-default 0 "$PFI" analyze "$SRC/data/zeus_nsdi23_power" "$SRC/data/zeus_jit_profile"
rm -f /tmp/pfi-cli-out.$$ /tmp/pfi-cli-err.$$
exit $fail
