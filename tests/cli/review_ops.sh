#!/bin/sh
# The last review's leftovers, each as a user met it: a directory given as an input file
# ("is a directory", not "read error"), a binary file as a config (refused, the line named,
# its bytes escaped), --timezone naming a file that is no zone ("not a TZif file", not "no
# such time zone"), a repeated or empty library name in pfi simulate, the live period table
# of pfi control with no agent answering ('-', not 0), an audit log that cannot be written
# (exit 3, as documented). Usage: review_ops.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
PFID=$2
SRC=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
. "$(dirname "$0")/check.sh" # check, grep_out
no_grep() { # no_grep NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "FAIL $1: '$2' in $3"; cat "$3"; fail=1; else echo "ok   $1"; fi
}
mkdir "$T/dir"

# --- directories as input files ---------------------------------------------------------
check alloc-dir 1 "$PFI" allocate --budget-w 1000 "$T/dir"
grep_out alloc-dir-says "is a directory" "$T/err"
no_grep alloc-dir-no-read-error "read error" "$T/err"
check alloc-topology-dir 1 "$PFI" allocate --budget-w 1000 --topology "$T/dir" "$SRC/examples/jobs.csv"
grep_out alloc-topology-dir-says "is a directory" "$T/err"
check restore-journal-dir 1 "$PFI" restore --journal "$T/dir"
grep_out restore-journal-dir-says "is a directory" "$T/err"
check restore-nothing 0 "$PFI" restore "$T/dir"
grep_out restore-nothing-says "nothing to restore" "$T/out"
check pfid-config-dir 2 "$PFID" --config "$T/dir" --check
grep_out pfid-config-dir-says "$T/dir: is a directory" "$T/err"
no_grep pfid-config-dir-no-read-error "read error" "$T/err"
check control-config-dir 1 "$PFI" control --config "$T/dir"
grep_out control-config-dir-says "is a directory" "$T/err"

# --- a binary file as a config: refused, line named, bytes escaped ------------------------
printf '# config\n\177ELF\002\001\033[2J\000\001\n' > "$T/bin.conf"
check pfid-config-binary 2 "$PFID" --config "$T/bin.conf" --check
grep_out pfid-config-binary-line "bin.conf:2: not text" "$T/err"
grep_out pfid-config-binary-escaped '\\x7FELF\\x02\\x01\\x1B\[2J\\x00\\x01' "$T/err"
grep_out pfid-config-binary-wants "want a 'key = value' line" "$T/err"
if LC_ALL=C grep -q "$(printf '\033')" "$T/err"; then
    echo "FAIL pfid-config-binary-raw: an escape byte reached the terminal"; fail=1
else
    echo "ok   pfid-config-binary-raw"
fi
check control-config-binary 2 "$PFI" control --config "$T/bin.conf"
grep_out control-config-binary-line "bin.conf:2: not text" "$T/err"
# a large binary file (an executable given as the config) is "not text" too, not "too large"
{ printf '\177ELF\002\001\001\000'; head -c 1100000 /dev/zero; } > "$T/big.bin"
check control-config-big-binary 2 "$PFI" control --config "$T/big.bin" --check
grep_out control-config-big-binary-says "big.bin:1: not text (\\\\x7FELF\\\\x02" "$T/err"
check pfid-config-big-binary 2 "$PFID" --config "$T/big.bin" --check
grep_out pfid-config-big-binary-says "big.bin:1: not text (\\\\x7FELF" "$T/err"
# a large text file: too large
head -c 1100000 /dev/zero | tr '\000' '#' > "$T/big.conf"
check control-config-big-text 2 "$PFI" control --config "$T/big.conf" --check
grep_out control-config-big-text-says "big.conf: larger than 1048576 bytes" "$T/err"
# a key given twice: refused, both lines named (the last one silently won)
printf 'budget_w = 5000\nperiod = 2\nbudget_w = 6000\n' > "$T/dup.conf"
check control-config-dup 2 "$PFI" control --config "$T/dup.conf" --check
grep_out control-config-dup-says "dup.conf:3: key 'budget_w' given twice: on line 1 and on line 3" "$T/err"
printf 'listen = 127.0.0.1:0\nbackend = emulated\nlisten = 127.0.0.1:1\n' > "$T/dup-pfid.conf"
check pfid-config-dup 2 "$PFID" --config "$T/dup-pfid.conf" --check
grep_out pfid-config-dup-says "dup-pfid.conf:3: key 'listen' given twice: on line 1 and on line 3" "$T/err"

# --- --timezone naming a file that is no zone --------------------------------------------
printf 'timestamp, index, power.draw [W]\n2025/01/01 00:00:00.000, 0, 300.0 W\n' > "$T/smi.csv"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$T/passwd"
check tz-not-tzif 2 "$PFI" ingest --dry-run --group g --cap 300 --timezone "$T/passwd" --telemetry "$T/smi.csv"
grep_out tz-not-tzif-says "is not a TZif file" "$T/err"
no_grep tz-not-tzif-not-missing "no such time zone" "$T/err"
check tz-dir 2 "$PFI" ingest --dry-run --group g --cap 300 --timezone "$T/dir" --telemetry "$T/smi.csv"
grep_out tz-dir-says "is a directory" "$T/err"
check tz-unknown 2 "$PFI" ingest --dry-run --group g --cap 300 --timezone Nowhere/Land --telemetry "$T/smi.csv"
grep_out tz-unknown-says "no such time zone" "$T/err"

# --- pfi simulate: each library once, none empty -----------------------------------------
check sim-lib-twice 2 "$PFI" simulate --library synthetic,synthetic --workloads 1
grep_out sim-lib-twice-says "'synthetic' is given twice" "$T/err"
check sim-lib-empty 2 "$PFI" simulate --library "" --workloads 1
grep_out sim-lib-empty-says "library: bad value ''" "$T/err"
check sim-lib-trailing 2 "$PFI" simulate --library synthetic, --workloads 1
grep_out sim-lib-trailing-says "none empty" "$T/err"

# --- pfi control: no agent answers -> '-' measured; an audit log that cannot be written --
# a port nothing listens on: bound, then released
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
(umask 077 && printf 'http://127.0.0.1:%s\n' "$port" > "$T/agents")
check ctl-no-agent 6 "$PFI" control --agents "$T/agents" --budget-w 1000 --period 0.1 --run-for 0.25
awk 'NR > 1 { print $4 }' "$T/out" > "$T/measured"
if [ -s "$T/measured" ] && ! grep -qv '^-$' "$T/measured"; then
    echo "ok   ctl-no-agent-measured-dash"
else
    echo "FAIL ctl-no-agent-measured-dash: measured column $(tr '\n' ' ' < "$T/measured")"; fail=1
fi
check ctl-db-readonly 3 "$PFI" control --agents "$T/agents" --budget-w 1000 --run-for 0.1 \
    --db /proc/pfi-no-such.db
grep_out ctl-db-readonly-says "audit log cannot be written" "$T/err"
check ctl-check-db-readonly 2 "$PFI" control --agents "$T/agents" --budget-w 1000 --check \
    --db /proc/pfi-no-such.db

check ctl-status-dir 1 "$PFI" control status --db "$T/dir"
grep_out ctl-status-dir-says "is a directory" "$T/err"
no_grep ctl-status-dir-no-io-error "disk I/O error" "$T/err"

# --- plain words: no "undefined%", no negative reduction, "1 sweep group" -----------------
check alloc-over-budget 0 "$PFI" allocate --budget-w 100000000 "$SRC/examples/jobs.csv"
grep_out alloc-over-budget-says "no reduction: the budget is above it" "$T/out"
no_grep alloc-over-budget-no-negative "(-[0-9.]*% reduction" "$T/out"
no_grep alloc-no-undefined-percent "undefined%" "$T/out"
"$PFI" library generate "$T/lib" > /dev/null 2>&1
mkdir "$T/one"
cp "$T/lib/pfi-dataset.json" "$T/one/"
awk -F, 'NR == 1 || $2 == "dense-8b-pt-8g-a"' "$T/lib/runs.csv" > "$T/one/runs.csv"
check analyze-one-group 0 "$PFI" analyze "$T/one"
grep_out analyze-one-group-says "^1 sweep group, 1 with a defined PFI" "$T/out"
grep_out analyze-one-group-class "class dense  *1 group,  " "$T/out"

exit $fail
