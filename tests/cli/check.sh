# Shared by the tests/cli scripts (sourced, after they set T, a scratch directory, and
# fail=0): check runs a command and compares its exit status; grep_out looks for a pattern
# in a file. Both print "ok   NAME" or "FAIL NAME: ..." and set fail=1 on failure.
check() { # check NAME EXPECTED_EXIT COMMAND...   (stdout in $T/out, stderr in $T/err)
    name=$1; want=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL $name: exit $got, want $want"; cat "$T/err"; fail=1
    else
        echo "ok   $name"
    fi
}
grep_out() { # grep_out NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "ok   $1"; else echo "FAIL $1: '$2' not in $3"; cat "$3"; fail=1; fi
}
