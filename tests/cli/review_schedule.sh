#!/bin/sh
# User-review regressions of pfi schedule and pfi report: values out of their documented
# range named with the option and the range, a ramp longer than its event, another file's
# CSV given as a schedule, an audit log without power readings, the shed energy without a
# baseline, pfi report --job's help.
# Usage: review_schedule.sh PFI_BINARY      (ctest cli_review_schedule)
set -u
PFI=$1
fail=0
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-review-schedule.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh" # check, grep_out

printf 'start_s,end_s,ramp_s,budget_w\n0,600,60,5000\n700,1e300,0,5000\n' >"$T/end.csv"
check schedule-end 1 "$PFI" schedule "$T/end.csv"
grep_out schedule-end-says "end.csv:3: .*end_s <= 31536000 (a year)" "$T/err"
printf 'start_s,end_s,ramp_s,budget_w\n0,600,60,5000\n700,800,200,5000\n' >"$T/ramp.csv"
check schedule-ramp 1 "$PFI" schedule "$T/ramp.csv"
grep_out schedule-ramp-says "ramp.csv:3: ramp_s 200 is longer than its event (100 s" "$T/err"
check schedule-speed 2 "$PFI" schedule --speed 1e308 "$T/ramp.csv"
grep_out schedule-speed-says "schedule: --speed: bad value '1e308': expected a number in \\[0.0001, 10000\\]" "$T/err"

# Another file's CSV given as the schedule: the message names the file, the header's line
# and the headers a schedule may have (a jobs CSV, an nvidia-smi telemetry CSV, whose
# timestamp column makes it look like a trace; a leading comment moves the header's line).
printf 'job,class,gpus,cap_w,power_w,tput_tok_s,pfi\ndense-pt,dense,8,200,1600,28000,1.25\n' \
    >"$T/jobs.csv"
check schedule-jobs-csv 1 "$PFI" schedule "$T/jobs.csv"
grep_out schedule-jobs-csv-says "jobs.csv:1: header 'job,class,gpus,cap_w,power_w,tput_tok_s,pfi' is not a schedule's: expected a text schedule (lines 'START END TARGET \[RAMP\]'), a CSV header with start_s, end_s and budget_w, reduction_pct or target" "$T/err"
printf '# jobs\njob,class,gpus\n' >"$T/jobs2.csv"
check schedule-jobs-csv-line 1 "$PFI" schedule "$T/jobs2.csv"
grep_out schedule-jobs-csv-line-says "jobs2.csv:2: header 'job,class,gpus' is not a schedule's" "$T/err"
printf 'timestamp, index, power.draw [W]\n2025/11/02 14:20:01.004, 0, 301.22 W\n' >"$T/smi.csv"
check schedule-smi-csv 1 "$PFI" schedule "$T/smi.csv"
grep_out schedule-smi-csv-says "smi.csv:1: header 'timestamp,index,power.draw \[W\]' is not a trace's: expected a trace header timestamp,total" "$T/err"
printf 'http://127.0.0.1:1\n' >"$T/agents"
chmod 600 "$T/agents"
check control-jobs-csv 1 "$PFI" control --agents "$T/agents" --schedule "$T/jobs.csv" --run-for 1
grep_out control-jobs-csv-says "jobs.csv:1: header 'job,class,gpus,cap_w,power_w,tput_tok_s,pfi' is not a schedule's" "$T/err"
# a bad first event is still a bad event, not a header (nan is no name)
printf 'nan 600 30%%\n' >"$T/nan.txt"
check schedule-nan-start 1 "$PFI" schedule "$T/nan.txt"
grep_out schedule-nan-start-says "nan.txt:1: START and END must be seconds" "$T/err"

check settle-interval 2 "$PFI" report --settlement --interval -5 "$T/none.db"
grep_out settle-interval-says "report --settlement: --interval: bad value '-5': expected a number in (0, 86400]" "$T/err"
check settle-speed 2 "$PFI" report --settlement --speed 1e308 "$T/none.db"
grep_out settle-speed-says "report --settlement: --speed: bad value '1e308'" "$T/err"

# An audit log: 4 periods of 10 s, the event from the first (no pre-event baseline).
audit() { # audit FILE MEASURED_W
    sqlite3 "$1" "CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL,
        event INTEGER, budget_w REAL, measured_w REAL, ref_w REAL, tput_tok_s REAL);
        CREATE TABLE ctl_jobs(period INTEGER, job TEXT, gpus INTEGER, ref_tput REAL, tput REAL);
        INSERT INTO ctl_periods(run, t_s, event, budget_w, measured_w, ref_w, tput_tok_s) VALUES
        (1, 0, 1, 1000, $2, 1200, 10), (1, 10, 1, 1000, $2, 1200, 10),
        (1, 20, 1, 1000, $2, 1200, 10), (1, 30, 1, 1000, $2, 1200, 10);"
}
audit "$T/empty.db" NULL
check settle-no-readings 1 "$PFI" report --settlement "$T/empty.db"
grep_out settle-no-readings-says "has no power reading" "$T/err"
audit "$T/nobase.db" 900
check settle-no-baseline 0 "$PFI" report --settlement --json "$T/nobase.db"
grep_out settle-no-baseline-null '"shed_kwh": null' "$T/out"
if grep -q '"shed_kwh": 0' "$T/out"; then echo "FAIL settle-no-baseline-zero"; fail=1; else echo "ok   settle-no-baseline-zero"; fi

check report-help 0 "$PFI" report --help
grep_out report-help-job "With --job ID" "$T/out"
check report-job-help 0 "$PFI" report --job --help
grep_out report-job-help-usage "usage: pfi report --job ID" "$T/out"

exit $fail
