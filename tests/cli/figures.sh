#!/bin/sh
# Every figure keeps its titles, axis labels and legends inside the image and inside its own
# panel (png_margins.py: a clean background band along every panel edge), in each layout the
# commands produce: pfi simulate (one, two and three panels a row), pfi analyze (one overlay,
# a 4 x 3 grid, a 6 x 6 grid), pfi stats (class and feature), pfi report (two panels). And
# pfi report tells every run's budget line apart by colour and dash pattern and names each in
# its legend (report_lines.py, on the SVG), draws a budget ramp as a ramp and breaks the
# tokens/s line where it is missing (report_shape.py, on the SVG).
# Usage: figures.sh PFI_BINARY SOURCE_DIR
set -u
PFI=$1
SRC=$2
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/pfi-cli-figures.XXXXXX)
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
run() { # run NAME COMMAND... — the command must exit 0
    name=$1; shift
    if "$@" >"$T/out" 2>"$T/err"; then ok "$name"; else bad "$name: exit $?"; cat "$T/err"; fi
}
margins() { # margins FIGURE COLS ROWS
    if python3 "$HERE/png_margins.py" "$1" "$2" "$3" >"$T/m" 2>&1; then
        ok "$(basename "$1"): every label inside its panel (${2}x$3)"
    else
        bad "$(basename "$1"): $(head -3 "$T/m")"
    fi
}

# pfi simulate: both mixes (gap: 2 panels), three classes (3 panels), one mix (1 panel)
run simulate "$PFI" simulate --workloads 20 --jobs 30 --quiet --plot-gap "$T/gap2.png" \
    --plot-classes "$T/classes3.png"
margins "$T/gap2.png" 2 1
margins "$T/classes3.png" 3 1
run simulate-random "$PFI" simulate --workloads 20 --jobs 30 --quiet --mix random \
    --plot-gap "$T/gap1.png"
margins "$T/gap1.png" 1 1

# pfi analyze: one group (overlay), 12 files (4 x 3 panels), 36 groups (6 x 6 panels)
run analyze-one "$PFI" analyze "$SRC/data/zeus_jit_profile/A40+bert-base-uncased+gpu0.csv" \
    --plot "$T/one.png"
margins "$T/one.png" 1 1
run analyze-12 "$PFI" analyze "$SRC/data/zeus_jit_profile" --plot "$T/grid12.png"
margins "$T/grid12.png" 4 3
run library "$PFI" library generate --quiet "$T/lib"
# 25 groups and 11 renamed copies: 36, the most that get a panel each
awk -F, 'NR == 1 { print; next } { print; row[NR] = $0; g[NR] = $2 }
    END { n = 0; for (i = 2; i <= NR; i++) { if (!(g[i] in seen)) { seen[g[i]] = 1; n++ }
          if (n > 11) break; r = row[i]; sub("," g[i] ",", "," g[i] "-copy,", r); print r } }' \
    "$T/lib/runs.csv" >"$T/runs36.csv" && mv "$T/runs36.csv" "$T/lib/runs.csv"
run analyze-36 "$PFI" analyze "$T/lib" --plot "$T/grid36.png"
margins "$T/grid36.png" 6 6

# pfi stats
run stats "$PFI" stats "$T/lib" --plot-class "$T/class.png" --plot-feature "$T/feature.png"
margins "$T/class.png" 1 1
margins "$T/feature.png" 1 1

# pfi report: two controller runs under the same budget (the lines overlap), from audit logs
# written here with the controller's schema
for s in pfi-model equal; do
    python3 - "$T/$s.db" "$s" <<'PY' || bad "audit log $s"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL, wall_s REAL,"
           " event INTEGER, budget_w REAL, alloc_budget_w REAL, measured_w REAL, reserved_w REAL,"
           " predicted_w REAL, correction_w REAL, ref_w REAL, tput_tok_s REAL, cap_sum_w REAL,"
           " strategy TEXT, agents_up INTEGER, agents INTEGER, jobs INTEGER, gpus INTEGER,"
           " decreases INTEGER, increases INTEGER, unconfirmed INTEGER, telemetry TEXT,"
           " restored INTEGER, note TEXT)")
keep = 0.86 if sys.argv[2] == "pfi-model" else 0.79
for i in range(20):
    t = 0.5 * i
    event = 2 <= t < 8
    db.execute("INSERT INTO ctl_periods(run, t_s, wall_s, event, budget_w, measured_w, reserved_w,"
               " tput_tok_s, strategy, agents_up, agents) VALUES(1,?,?,?,?,?,0,?,?,4,4)",
               (t, 1e9 + t, int(event), 14560 if event else None,
                14100 if event else 20800, 1e5 * (keep if event else 1.0), sys.argv[2]))
db.commit()
db.close()
PY
done
run report-png "$PFI" report "$T/pfi-model.db" "$T/equal.db" -o "$T/report.png"
margins "$T/report.png" 1 2
run report-svg "$PFI" report "$T/pfi-model.db" "$T/equal.db" -o "$T/report.svg"
# the event runs from 2 s to 8 s (periods 2.0 ... 7.5 s); the data lines from 0 to 9.5 s
if python3 "$HERE/report_lines.py" "$T/report.svg" 2 2 8 9.5 >"$T/m" 2>&1; then
    ok "report: each run's budget line has its own colour and dashes, a legend entry, and covers the event to its end"
else
    bad "report budget lines: $(cat "$T/m")"
fi

# pfi report: a budget that ramps (2 .. 4 s) and tokens/s missing from 5 to 6.5 s
python3 - "$T/ramp.db" <<'PY' || bad "audit log ramp"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE ctl_periods(id INTEGER PRIMARY KEY, run INTEGER, t_s REAL, wall_s REAL,"
           " event INTEGER, budget_w REAL, alloc_budget_w REAL, measured_w REAL, reserved_w REAL,"
           " predicted_w REAL, correction_w REAL, ref_w REAL, tput_tok_s REAL, cap_sum_w REAL,"
           " strategy TEXT, agents_up INTEGER, agents INTEGER, jobs INTEGER, gpus INTEGER,"
           " decreases INTEGER, increases INTEGER, unconfirmed INTEGER, telemetry TEXT,"
           " restored INTEGER, note TEXT)")
for i in range(20):
    t = 0.5 * i
    event = 2 <= t < 8
    b = (20800 - (20800 - 14560) * min(1.0, (t - 2) / 2)) if event else None
    tput = None if 5 <= t < 6.5 else 1e5 * (0.86 if event else 1.0)
    db.execute("INSERT INTO ctl_periods(run, t_s, wall_s, event, budget_w, measured_w, reserved_w,"
               " tput_tok_s, strategy, agents_up, agents) VALUES(1,?,?,?,?,?,0,?,'pfi-model',4,4)",
               (t, 1e9 + t, int(event), b, (b - 300) if event else 20800, tput))
db.commit()
db.close()
PY
run report-ramp "$PFI" report "$T/ramp.db" -o "$T/ramp.svg"
if python3 "$HERE/report_shape.py" "$T/ramp.svg" 3 >"$T/m" 2>&1; then
    ok "report: the budget ramp drawn as a ramp, tokens/s broken where missing"
else
    bad "report shape: $(cat "$T/m")"
fi
run report-ramp-png "$PFI" report "$T/ramp.db" -o "$T/ramp.png"
margins "$T/ramp.png" 1 2

[ -n "${KEEP_FIGURES:-}" ] && echo "figures kept in $T" || rm -rf "$T"
exit $fail
