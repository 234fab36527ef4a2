#!/bin/sh
# A priority band is one rule wherever it is given (issue 18 item 4; pfi_band_valid,
# pfi/topology.h): any number in [-1e6, 1e6], the same refusal words — pfi allocate's jobs
# file (its band column: it took a whole number 0 to 1e6 alone), pfi control's --policy band=
# and --qos-band QOS=BAND (PUT /v1/jobs/ID: control_band_sources). And a job is given one band:
# a jobs file whose job has two bands, or a policy with two rules for one job, is an error
# naming both lines (the jobs file took the first band, silently). No agent is asked: pfi
# control --check reads the inputs alone (its agent a URL nobody answers).
# usage: band_rule.sh PFI PFID SOURCE_DIR
set -u
PFI=$1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pfi-band-rule.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 2' HUP INT TERM
fail=0
check() { if [ "$1" -ne 0 ]; then echo "FAIL: $2"; fail=1; else echo "ok: $2"; fi; }
(umask 077 && printf 'http://127.0.0.1:9 0123456789abcdef0123456789abcdef\n' > "$WORK/agents")
RULE='must be a number in [-1e6, 1e6] (higher: cut last)'
H='job,class,gpus,cap_w,power_w,tput_tok_s,band'

# allocate B — pfi allocate on two alike jobs, a in band B; its exit status
allocate() {
    printf '%s\na,x,1,200,200,10,%s\na,x,1,300,300,12,\nb,x,1,200,200,10,0\nb,x,1,300,300,12,\n' \
        "$H" "$1" > "$WORK/jobs.csv"
    "$PFI" allocate --format csv "$WORK/jobs.csv" > "$WORK/out" 2> "$WORK/err"
}
# policy B — pfi control --check with the policy "a band=B"; its exit status
policy() {
    printf 'a band=%s\n' "$1" > "$WORK/policy"
    "$PFI" control --agents "$WORK/agents" --budget-w 1000 --policy "$WORK/policy" --check \
        > "$WORK/out" 2> "$WORK/err"
}
# qos B — pfi control --check with --qos-band premium=B; its exit status
qos() {
    "$PFI" control --agents "$WORK/agents" --budget-w 1000 --qos-band "premium=$1" --check \
        > "$WORK/out" 2> "$WORK/err"
}

# taken by all three: the bounds, a negative band, a fraction, an underflow (0: pfi_band_parse,
# one reading of a band's text; --policy and --qos-band refused 1e-400 as out of range)
for b in -1000000 -1e6 -0.5 0 2.5 1e6 1000000 1e-400; do
    allocate "$b"
    check $? "allocate: band $b taken ($(head -c 200 "$WORK/err"))"
    policy "$b"
    check $? "--policy: band=$b taken ($(head -c 200 "$WORK/err"))"
    qos "$b"
    check $? "--qos-band: premium=$b taken ($(head -c 200 "$WORK/err"))"
done
# refused by all three, in the same words after the field and its text (the text as given:
# 1000000.0000001 was printed 1000000; an overflow is out of range, not "not a number"); hex
# is no band anywhere (--policy and --qos-band took 0x10 as 16, pfi allocate refused it)
for b in 1000001 -1000001 2e6 -2e6 1000000.0000001 1e400 nan inf 0x10 0x1p3; do
    allocate "$b"
    rc=$?
    case $b in
    nan | inf | 0x*) want="$WORK/jobs.csv:2: column 'band': '$b' is not a number (expected a number in [-1e6, 1e6]" ;;
    *) want="$WORK/jobs.csv:2: column 'band': '$b': $RULE" ;;
    esac
    [ $rc -eq 1 ] && grep -qF -- "$want" "$WORK/err"
    check $? "allocate: band $b refused, exit $rc (want 1): $(head -c 300 "$WORK/err")"
    policy "$b"
    rc=$?
    case $b in # not a number: the jobs file's words (it said "must be a number in ...")
    nan | inf | 0x*) want="$WORK/policy:1: band '$b' is not a number (expected a number in [-1e6, 1e6])" ;;
    *) want="$WORK/policy:1: band '$b': $RULE" ;;
    esac
    [ $rc -eq 2 ] && grep -qF -- "$want" "$WORK/err"
    check $? "--policy: band=$b refused, exit $rc (want 2): $(head -c 300 "$WORK/err")"
    qos "$b"
    rc=$?
    # one line (a second, "pfi: control: --qos-band: bad value ...", followed it)
    case $b in
    nan | inf | 0x*) want="pfi: control: --qos-band: 'premium=$b': band is not a number (expected a number in [-1e6, 1e6])" ;;
    *) want="pfi: control: --qos-band: 'premium=$b': band $RULE" ;;
    esac
    [ $rc -eq 2 ] && grep -qF -- "$want" "$WORK/err" &&
        [ "$(wc -l < "$WORK/err")" -eq 1 ]
    check $? "--qos-band: premium=$b refused in one line, exit $rc (want 2): $(head -c 300 "$WORK/err")"
done

# a job with two bands: both lines named. The jobs file: its rows apart, and adjacent
printf '%s\na,x,1,200,200,10,2\nb,x,1,200,200,10,\na,x,1,300,300,12,1\n' "$H" > "$WORK/two.csv"
"$PFI" allocate "$WORK/two.csv" > "$WORK/out" 2> "$WORK/err"
rc=$?
[ $rc -eq 1 ] && grep -qF "$WORK/two.csv:4: column 'band': job 'a': band 2 at line 2, 1 at line 4" "$WORK/err"
check $? "allocate: job a in bands 2 and 1, exit $rc (want 1), both lines: $(head -c 300 "$WORK/err")"
printf '%s\na,x,1,200,200,10,-1\na,x,1,300,300,12,\na,x,1,400,350,13,-2\n' "$H" > "$WORK/two.csv"
"$PFI" allocate "$WORK/two.csv" > "$WORK/out" 2> "$WORK/err"
rc=$?
[ $rc -eq 1 ] && grep -qF "$WORK/two.csv:4: column 'band': job 'a': band -1 at line 2, -2 at line 4" "$WORK/err"
check $? "allocate: job a in bands -1 and -2, exit $rc (want 1), both lines: $(head -c 300 "$WORK/err")"
# two bands that %g said alike (1, 1): each in its shortest exact form
printf '%s\na,x,1,200,200,10,1.0000001\na,x,1,300,300,12,1.0000002\n' "$H" > "$WORK/two.csv"
"$PFI" allocate "$WORK/two.csv" > "$WORK/out" 2> "$WORK/err"
rc=$?
[ $rc -eq 1 ] && grep -qF "$WORK/two.csv:3: column 'band': job 'a': band 1.0000001 at line 2, 1.0000002 at line 3" "$WORK/err"
check $? "allocate: job a in bands 1.0000001 and 1.0000002 told apart, exit $rc: $(head -c 300 "$WORK/err")"
# the same band again, or none on a later row: one band, taken
printf '%s\na,x,1,200,200,10,2\nb,x,1,200,200,10,\na,x,1,300,300,12,2\na,x,1,400,350,13,\n' "$H" > "$WORK/same.csv"
"$PFI" allocate "$WORK/same.csv" > "$WORK/out" 2> "$WORK/err"
check $? "allocate: job a's band 2 on two rows, none on a third: taken ($(head -c 200 "$WORK/err"))"
# the policy: two rules for one job (two bands) name both lines
printf 'a band=2\n# a comment\nb band=0\na band=1\n' > "$WORK/policy"
"$PFI" control --agents "$WORK/agents" --budget-w 1000 --policy "$WORK/policy" --check \
    > "$WORK/out" 2> "$WORK/err"
rc=$?
[ $rc -eq 2 ] && grep -qF "$WORK/policy:4: job 'a' has two rules: at line 1 and at line 4" "$WORK/err"
check $? "--policy: job a in bands 2 and 1, exit $rc (want 2), both lines: $(head -c 300 "$WORK/err")"
# pfi control status prints each job's band in plain digits, the shortest that reads back
# (1e6 was "1e+06", 1.0000001 was "1", 0.00001 "1e-05"): an audit log of one period made here
python3 - "$WORK/bands.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL, wall_s REAL,"
           " event INTEGER, budget_w REAL, alloc_budget_w REAL, measured_w REAL, reserved_w REAL,"
           " predicted_w REAL, correction_w REAL, ref_w REAL, tput_tok_s REAL, cap_sum_w REAL,"
           " strategy TEXT, agents_up INTEGER, agents INTEGER, jobs INTEGER, gpus INTEGER,"
           " decreases INTEGER, increases INTEGER, unconfirmed INTEGER, telemetry TEXT,"
           " restored INTEGER, note TEXT)")
db.execute("CREATE TABLE ctl_jobs(period INTEGER, job TEXT, class TEXT, gpus INTEGER, pfi REAL,"
           " source TEXT, cap_w REAL, ref_power_w REAL, ref_tput REAL, power_w REAL,"
           " pred_power_w REAL, tput REAL, cap_state TEXT, band REAL)")
db.execute("INSERT INTO ctl_periods(run, t_s, wall_s, event, strategy, agents_up, agents)"
           " VALUES(1, 0, 1e9, 0, 'equal', 1, 1)")
for j, b in (("a", 1e6), ("b", 1.0000001), ("c", -0.5), ("d", None), ("e", 1e-5), ("f", -1e6)):
    db.execute("INSERT INTO ctl_jobs(period, job, gpus, source, cap_w, band)"
               " VALUES(1, ?, 1, 'x', 300, ?)", (j, b))
db.commit()
PY
"$PFI" control status --db "$WORK/bands.db" > "$WORK/out" 2> "$WORK/err"
rc=$?
got=$(awk 'f && NF { printf "%s=%s ", $1, $NF } /^job / { f = 1 }' "$WORK/out")
[ $rc -eq 0 ] && [ "$got" = "a=1000000 b=1.0000001 c=-0.5 d=- e=0.00001 f=-1000000 " ]
check $? "control status: bands in plain digits, exit $rc: $got"
exit $fail
