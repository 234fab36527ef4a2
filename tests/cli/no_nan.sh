#!/bin/sh
# Missing values are shown as missing: no output of pfi — table, CSV, JSON, report lines —
# prints "nan" or "inf" (any case, signed or not). Runs every command that can meet a missing
# or undefined value, in each of its output formats, on the embedded data, the field cases and
# small stores and audit logs made here with missing values, and greps stdout and stderr.
# Usage: no_nan.sh PFI_BINARY SOURCE_DIR [CASES_DIR]      (ctest cli_no_nan)
set -u
PFI=$1
SRC=$2
CASES=${3:-$SRC/tests/cases}
T=$(mktemp -d "${TMPDIR:-/tmp}/pfi-no-nan.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
fail=0
n=0
# run NAME COMMAND...: keep stdout and stderr as $T/o/NAME.{out,err}; a crash fails
mkdir -p "$T/o"
run() {
    name=$1; shift
    n=$((n + 1))
    "$@" >"$T/o/$name.out" 2>"$T/o/$name.err"
    rc=$?
    if [ "$rc" -gt 5 ] && [ "$rc" -ne "${allow_rc:-0}" ]; then echo "FAIL $name: exit $rc"; cat "$T/o/$name.err"; fail=1; fi
}
# nan, inf, infinity as a word of their own ("nan-loss", a flag's name, is not one)
NAN_RE='(?i)(?<![A-Za-z0-9_-])[-+]?(nan|inf|infinity)(?![A-Za-z0-9_-])'

# pfi analyze / stats: the embedded data and the hand-made set
pts() { [ "$1" = table ] && echo --points; } # --points: the table's per-point lines
for f in table csv json; do
    # shellcheck disable=SC2046
    run analyze-zeus-$f "$PFI" analyze "$SRC/data/zeus_jit_profile" --format "$f" $(pts "$f")
    run analyze-nsdi-$f "$PFI" analyze "$SRC/data/zeus_nsdi23_power" --format "$f"
    # shellcheck disable=SC2046
    run analyze-handmade-$f "$PFI" analyze "$SRC/tests/data/cli/handmade" --format "$f" $(pts "$f")
    run stats-zeus-$f "$PFI" stats "$SRC/data/zeus_jit_profile" --format "$f"
done

# the synthetic library: stats, fit, predict; a 4-group excerpt where statistics are undefined
run library "$PFI" library generate --quiet "$T/lib"
run groups "$PFI" stats "$T/lib" --groups-out "$T/groups.csv"
head -n 5 "$T/groups.csv" >"$T/few.csv"
run fit-model "$PFI" fit "$T/lib" -m "$T/model.json"
for f in table csv json; do
    run stats-lib-$f "$PFI" stats "$T/lib" --format "$f"
    run stats-few-$f "$PFI" stats "$T/few.csv" --format "$f"
    run fit-few-$f "$PFI" fit "$T/few.csv" --format "$f"
    run predict-$f "$PFI" predict -m "$T/model.json" --groups "$T/few.csv" --format "$f"
done
run predict-one "$PFI" predict -m "$T/model.json" dcgm_dram_active=0.4 dcgm_mem_copy_util=0.3

# pfi allocate (a job at its top cap has no marginal gain above) and simulate
for f in table csv json; do
    run allocate-$f "$PFI" allocate --explain --format "$f" "$SRC/examples/jobs.csv"
    run allocate-infeasible-$f "$PFI" allocate --format "$f" --reduction 80% "$SRC/examples/jobs.csv"
    run simulate-$f "$PFI" simulate --workloads 20 --format "$f"
done

# pfi ingest --dry-run on every field case; a store with runs lacking power, throughput,
# standard errors, class and GPU count; pfi runs and analyze --db in each format
for c in "$CASES"/case-*; do
    for t in "$c"/*; do
        case $t in *.md) continue ;; esac
        run "ingest-$(basename "$c")-$(basename "$t")" "$PFI" ingest --dry-run --telemetry "$t"
    done
done
run ingest-lost "$PFI" ingest --db "$T/s.db" --group g1 --cap 300 --telemetry "$CASES/case-03/query_loop.csv"
run ingest-one "$PFI" ingest --db "$T/s.db" --group g1 --cap 250 --class dense --gpus 2 \
    --telemetry "$CASES/case-02/units.csv"
run ingest-na "$PFI" ingest --db "$T/s.db" --group g2 --cap 250 --interval 1 \
    --telemetry "$CASES/case-08/dcgmi_dmon_prof_na.txt"
for f in table csv json; do
    run runs-$f "$PFI" runs --db "$T/s.db" --format "$f"
    # shellcheck disable=SC2046
    run analyze-db-$f "$PFI" analyze --db "$T/s.db" --format "$f" $(pts "$f")
done

# pfi sweep on emulated GPUs, table / csv / json
for f in table csv json; do
    run sweep-$f "$PFI" sweep --backend emulated --emulate gpus=2,noise=0.01 --caps 300,250,200 \
        --duration 2m --interval 5s --db "$T/sw-$f.db" --group sw --format "$f"
done

# pfi control: an agent that never answers (no budget outside the event, nothing measured),
# then control status and report on its audit log and on one with every value missing
echo "http://127.0.0.1:9 token" >"$T/agents"
allow_rc=6 # an agent that never answers is a degraded run: exit 6 (documented), not a crash
run control-lines "$PFI" control --agents "$T/agents" --reduction 30% --start 0.4 \
    --duration 0.4 --period 0.2 --run-for 1.2 --db "$T/c.db"
allow_rc=0
grep -q '^ *0.00 *no *- ' "$T/o/control-lines.out" ||
    { echo "FAIL control-lines: no '-' budget outside the event"; fail=1; }
run control-status "$PFI" control status --db "$T/c.db"
run report "$PFI" report "$T/c.db" -o "$T/c.svg"
python3 - "$T/null.db" <<'PY' || { echo "FAIL audit log with missing values"; fail=1; }
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
           " pred_power_w REAL, tput REAL)")
for i in range(4):
    db.execute("INSERT INTO ctl_periods(run, t_s, wall_s, event, strategy, agents_up, agents)"
               " VALUES(1, ?, ?, 0, 'equal', 0, 1)", (0.5 * i, 1e9 + 0.5 * i))
db.execute("INSERT INTO ctl_jobs(period, job, gpus, source) VALUES(4, 'j1', 0, NULL)")
db.commit()
PY
run control-status-null "$PFI" control status --db "$T/null.db"
run report-null "$PFI" report "$T/null.db" -o "$T/null.svg"
grep -q 'budget *none' "$T/o/control-status-null.out" ||
    { echo "FAIL control-status-null: the missing budget is not a word"; fail=1; }

# the review's cases (issues 14, 18, 20): control status --json, report --json and the
# settlement (table and JSON; a --skip past the event) on both audit logs; allocate with a job
# without throughput (its share kept missing) and a long name; schedule --format json
# an audit log whose event has readings but no pre-event window, no reference power, a
# period without a reading and a job without a reference: the settlement's undefined values
python3 - "$T/part.db" <<'PY' || { echo "FAIL audit log with a partial event"; fail=1; }
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL, wall_s REAL,"
           " event INTEGER, budget_w REAL, alloc_budget_w REAL, measured_w REAL, reserved_w REAL,"
           " predicted_w REAL, correction_w REAL, ref_w REAL, tput_tok_s REAL, cap_sum_w REAL,"
           " strategy TEXT, agents_up INTEGER, agents INTEGER, note TEXT)")
db.execute("CREATE TABLE ctl_jobs(period INTEGER, job TEXT, class TEXT, gpus INTEGER, pfi REAL,"
           " source TEXT, cap_w REAL, ref_power_w REAL, ref_tput REAL, power_w REAL,"
           " pred_power_w REAL, tput REAL)")
for i in range(8):
    m = None if i == 5 else 1000.0 + 10 * i
    db.execute("INSERT INTO ctl_periods(run, t_s, wall_s, event, budget_w, measured_w, tput_tok_s,"
               " strategy, agents_up, agents) VALUES(1, ?, ?, 1, 1000, ?, NULL, 'equal', 1, 1)",
               (1.0 * i, 1e9 + i, m))
    db.execute("INSERT INTO ctl_jobs(period, job, gpus, ref_tput, tput) VALUES(?, 'j1', 4, NULL, NULL)",
               (i + 1,))
    db.execute("INSERT INTO ctl_jobs(period, job, gpus, ref_tput, tput) VALUES(?, 'j2', 4, 100, 90)",
               (i + 1,))
db.commit()
PY
printf 'job,tier\nj1,Flex 1\nj2,Flex 2\n' >"$T/tiers.csv"
run settlement-part "$PFI" report --settlement --tiers "$T/tiers.csv" "$T/part.db"
run settlement-part-json "$PFI" report --settlement --json --tiers "$T/tiers.csv" "$T/part.db"
run settlement-part-skip "$PFI" report --settlement --skip 6.5 "$T/part.db"
run settlement-part-skip-all "$PFI" report --settlement --skip 99999 "$T/part.db"
# ... and missing is never 0: no uncapped prediction, no kWh shed against it (it was 0.000);
# a job with no reference has no tokens lost (it was 0); an excess past --skip is refused
grep -q '^energy shed: undefined against the pre-event level, undefined against uncapped$' \
    "$T/o/settlement-part.out" && grep -q '^  j1  *4 Flex 1  *-  *-  *- ' "$T/o/settlement-part.out" ||
    { echo "FAIL settlement-part: a missing value shown as a number"; cat "$T/o/settlement-part.out"; fail=1; }
python3 - "$T/o/settlement-part-json.out" <<'PY' || { echo "FAIL settlement-part-json: a missing value not null"; fail=1; }
import json, sys
s = json.load(open(sys.argv[1]))
j1 = next(j for j in s["per_job"] if j["name"] == "j1")
sys.exit(0 if s["energy_shed_uncapped_kwh"] is None and j1["tokens_lost"] is None
         and all(i["shed_uncapped_kwh"] is None for i in s["intervals"]) else 1)
PY
grep -q 'leaves out every sample of the event' "$T/o/settlement-part-skip-all.err" ||
    { echo "FAIL settlement-part-skip-all: not refused"; fail=1; }
for db in c null part; do
    run "control-status-json-$db" "$PFI" control status --db "$T/$db.db" --json
    run "report-json-$db" "$PFI" report --json "$T/$db.db"
    run "settlement-$db" "$PFI" report --settlement "$T/$db.db"
    run "settlement-json-$db" "$PFI" report --settlement --json "$T/$db.db"
    run "settlement-skip-$db" "$PFI" report --settlement --skip 99999 "$T/$db.db"
done
printf 'job,cap_w,power_w,tput_tok_s\nidle,200,1600,0\nidle,400,3200,0\nllama-70b-fine-tuning-on-the-long-context-data,200,1600,100\nllama-70b-fine-tuning-on-the-long-context-data,400,3200,150\n' >"$T/idle.csv"
for f in table csv json; do
    run "allocate-idle-$f" "$PFI" allocate --explain --budget-w 4000 --format "$f" "$T/idle.csv"
    run "allocate-tree-$f" "$PFI" allocate --explain --budget-kind reserve --format "$f" \
        "$SRC/examples/jobs_tree.csv"
done
printf '0 600 30%%\n600 1200 5200W 60\n' >"$T/sched.txt"
run schedule-json "$PFI" schedule --format json "$T/sched.txt"
run schedule-table "$PFI" schedule "$T/sched.txt"

# pfi ingest on every telemetry reader's corpus (tests/fuzz/corpus: every layout, version and
# past crash), plain and with a cap and a zone (cap-lost / throttled / zone summaries), then
# the runs of a store holding a cap-short run (no power) in every format
for d in smi_csv dmon smi_query dcgmi prom prom_api smi_xml; do
    for t in "$SRC/tests/fuzz/corpus/$d"/*; do
        [ -f "$t" ] || continue
        b="corpus-$d-$(basename "$t")"
        run "$b" "$PFI" ingest --dry-run --telemetry "$t"
        run "$b-cap" "$PFI" ingest --dry-run --cap 300 --q 1 --timezone Europe/Berlin --telemetry "$t"
    done
done
{ echo "timestamp, index, power.draw [W], enforced.power.limit [W], clocks_event_reasons.active"
  for s in 0 1 2 3; do printf '2026/01/01 00:00:0%d.000, 0, 290.00 W, 700.00 W, 0x0000000000000044\n' "$s"; done; } >"$T/capshort.csv"
run ingest-capshort "$PFI" ingest --db "$T/cs.db" --group g --cap 300 --telemetry "$T/capshort.csv"
for f in table csv json; do
    run "runs-capshort-$f" "$PFI" runs --db "$T/cs.db" --format "$f"
done
run analyze-capshort "$PFI" analyze --db "$T/cs.db" --format csv

# every output of every run above
if grep -P -l "$NAN_RE" "$T"/o/* >"$T/hits" 2>/dev/null; then
    for h in $(cat "$T/hits"); do
        echo "FAIL $(basename "$h"): prints nan/inf:"
        grep -P -n "$NAN_RE" "$h" | head -n 5
    done
    fail=1
fi
[ "$fail" -eq 0 ] && echo "ok   $n runs: no nan or inf in any output"
exit $fail
