#!/bin/sh
# One voice for every command: each verb of pfi (and pfid) is run with an unknown option, an
# option without its value and a number option given 'abc'; each must exit 2 and say so in
# the one wording of src/cli/opterr.h, naming the verb and its --help:
#   pfi: VERB: unknown option '--no-such-option' (see 'pfi VERB --help')
#   pfi: VERB: option '--OPT' needs a value (see 'pfi VERB --help')
#   pfi: VERB: --OPT: bad value 'abc': expected WHAT      (or "(see 'pfi VERB --help')")
# pfid says the same after its log prefix ("pfid: error: "); every --help documents exit 2
# for a bad command line. Usage: options.sh PFI PFID
set -u
PFI=$1
PFID=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
n=0

# The table: the verb as messages name it | the arguments before the option | an option
# that takes a value | an option that takes a number ('-': the verb has none).
cat > "$T/table" <<'EOF2'
analyze|analyze|--db|--draws
stats|stats|--alpha|--alpha
fit|fit|--model|-
predict|predict|--interval|--interval
library generate|library generate|--seed|--seed
ingest|ingest|--cap|--cap
runs|runs|--db|-
allocate|allocate|--budget-w|--budget-w
simulate|simulate|--jobs|--jobs
sweep|sweep|--duration|--duration
restore|restore|--journal|-
probe|probe|--duration|--duration
control|control|--budget-w|--period
control status|control status|--db|-
schedule|schedule|--speed|--speed
openadr poll|openadr poll|--epoch|--epoch
report|report|--title|-
report --settlement|report --settlement|--speed|--speed
report --job|report --job=5|--db|-
slurm prolog|slurm prolog|--timeout|--timeout
slurm epilog|slurm epilog|--timeout|--timeout
slurm admit|slurm admit|--gpu-min-w|--gpu-min-w
demo cluster|demo cluster|--agents|--agents
demo grid-event|demo grid-event|--speed|--speed
pfid|pfid|--interval|--interval
EOF2

# run NAME ARGS... — exit code into RC, stderr into $T/err
run() {
    name=$1
    shift
    "$@" > /dev/null 2> "$T/err" < /dev/null
    RC=$?
}
# expect NAME REGEX — exit 2 and the first stderr line matches REGEX (ERE)
expect() {
    n=$((n + 1))
    line=$(head -1 "$T/err")
    if [ "$RC" -ne 2 ]; then
        echo "FAIL $1: exit $RC (want 2): $line"
        fail=1
    elif ! printf '%s\n' "$line" | grep -Eq -- "$2"; then
        echo "FAIL $1: '$line' is not /$2/"
        fail=1
    else
        echo "ok   $1: $line"
    fi
}
# ERE-quote a literal
q() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }

while IFS='|' read -r verb args vopt nopt; do
    if [ "$verb" = pfid ]; then
        prog=$PFID lead='^pfid: error: ' help="pfid"
    else
        prog=$PFI lead="^pfi: $(q "$verb"): " help="pfi $verb"
    fi
    see=" \\(see '$(q "$help") --help'\\)$"
    # shellcheck disable=SC2086
    if [ "$verb" = pfid ]; then set --; else set -- $args; fi
    # the exit code is the one its --help documents for a bad command line
    n=$((n + 1))
    if "$prog" "$@" --help 2>&1 | tr '\n' ' ' | grep -Eq "2 (bad|a bad) (command line|usage)"; then
        echo "ok   $verb: --help documents exit 2 for a bad command line"
    else
        echo "FAIL $verb: --help does not document exit 2 for a bad command line"
        fail=1
    fi
    run "$verb unknown" "$prog" "$@" --no-such-option
    expect "$verb: unknown option" "${lead}unknown option '--no-such-option'$see"
    run "$verb missing" "$prog" "$@" "$vopt"
    expect "$verb: $vopt without its value" "${lead}option '$(q "$vopt")' needs a value$see"
    if [ "$nopt" != - ]; then
        run "$verb bad" "$prog" "$@" "$nopt" abc
        expect "$verb: $nopt abc" "${lead}$(q "$nopt"): bad value 'abc'(: expected .+|$see)"
    fi
done < "$T/table"

# verbs whose subcommand comes first, and messages written by hand: the same wording
J=$(dirname "$0")/../../examples/jobs.csv
run "openadr bogus" "$PFI" openadr --bogus
expect "openadr: unknown option" "^pfi: openadr: unknown option '--bogus' \\(see 'pfi openadr --help'\\)$"
run "demo bogus" "$PFI" demo --bogus
expect "demo: unknown option" "^pfi: demo: unknown option '--bogus' \\(see 'pfi demo --help'\\)$"
# a word that is no subcommand: one line with the verb's prefix, never the whole help
for vs in "demo|'cluster' or 'grid-event'" "openadr|'poll'" "library|'generate'" \
    "slurm|'prolog', 'epilog' or 'admit'"; do
    v=${vs%%|*} want=${vs#*|}
    run "$v bogus-sub" "$PFI" "$v" bogus-sub
    expect "$v: unknown subcommand" "^pfi: $v: unknown subcommand 'bogus-sub' \\(expected $want; see 'pfi $v --help'\\)$"
    n=$((n + 1))
    if [ "$(wc -l < "$T/err")" -eq 1 ]; then echo "ok   $v bogus-sub: one line"
    else echo "FAIL $v bogus-sub: $(wc -l < "$T/err") lines"; fail=1; fi
done
run "allocate reduction" "$PFI" allocate --reduction 5 "$J"
expect "allocate: --reduction 5" "^pfi: allocate: --reduction: reduction '5' is ambiguous"
run "allocate cap-step" "$PFI" allocate --cap-step 600 "$J"
expect "allocate: --cap-step 600" "^pfi: allocate: --cap-step 600 W is larger than every job's cap range"
run "simulate reductions" "$PFI" simulate --reductions 120%
expect "simulate: --reductions 120%" "^pfi: simulate: --reductions: reduction '120%' is outside 0%\\.\\.100%"
n=$((n + 1))
if [ "$(wc -l < "$T/err")" -eq 1 ]; then
    echo "ok   simulate: --reductions 120%: one line"
else
    echo "FAIL simulate: --reductions 120%: $(wc -l < "$T/err") lines:"; cat "$T/err"; fail=1
fi

[ $fail -eq 0 ] && echo "options: $n cases, one wording, exit 2"
exit $fail
