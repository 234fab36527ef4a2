#!/usr/bin/python3
"""Independent settlement of a power event from pfi control's audit log (SQLite), for
tests/control/grid_settlement.sh: shares no code with src/lib/control/settlement.c.

Definitions (README "grid events", pfi/grid.h): the latest run's first contiguous event
periods; a period lasts until the next one (the last as long as the one before); event time
= log time x speed; pre-event baseline = time-weighted mean measured power of the periods
before the event whose start lies within the pre-event window (each its own reading); kWh
shed = sum over event periods of (baseline - measured) x dt x speed / 3.6e6, an event
period's measured power being the next period's reading (the last period: its own), against the pre-event level and
against ref_w (the uncapped predictions); per job, from ctl_jobs: reference = the
time-weighted mean of the job's tput > 0 in the pre-event window's periods (those of the
power baseline: start within the window, not the ramp's lead; each period's own reading),
else ref_tput (per GPU) x gpus of the period; over the event periods where the controller
had a reference (ref_tput > 0) and a tput: performance = sum tput dt / sum ref dt, tokens
lost = sum (ref - min(tput, ref)) dt x speed.

With REFERENCE.csv (job,tput_tok_s: pfi report --settlement --reference), a job listed there
has that reference instead.

usage: settlement_reference.py AUDIT.db SPEED PRE_WINDOW_S [REFERENCE.csv]  -> JSON on stdout
"""
import csv
import json
import sqlite3
import sys


def main():
    db, speed, pre_window = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    given = {}
    if len(sys.argv) > 4:
        given = {r["job"]: float(r["tput_tok_s"]) for r in csv.DictReader(open(sys.argv[4]))}
    c = sqlite3.connect(db)
    run = c.execute("select max(run) from ctl_periods").fetchone()[0]
    try:
        rows = c.execute("select id, t_s, event, budget_w, measured_w, ref_w, lead from "
                         "ctl_periods where run = ? order by id", (run,)).fetchall()
    except sqlite3.OperationalError:  # a log without the lead column
        rows = [r + (None,) for r in c.execute(
            "select id, t_s, event, budget_w, measured_w, ref_w from ctl_periods "
            "where run = ? order by id", (run,)).fetchall()]
    n = len(rows)
    dts = [rows[k + 1][1] - rows[k][1] for k in range(n - 1)]
    dts.append(dts[-1] if dts else 0.0)
    first = next(k for k in range(n) if rows[k][2])
    last = first
    while last < n and rows[last][2]:
        last += 1
    start = rows[first][1] * speed
    pre = [(rows[k][4], dts[k]) for k in range(first)
           if rows[k][1] * speed >= start - pre_window and rows[k][4] is not None]
    pre_w = sum(m * d for m, d in pre) / sum(d for _, d in pre) if pre else None
    shed_pre = shed_unc = 0.0
    for k in range(first, last):
        _, t, ev, b, _, ref, _ = rows[k]
        m = rows[k + 1][4] if k + 1 < n else rows[k][4]
        if m is None:
            continue
        e = dts[k] * speed / 3.6e6
        if pre_w is not None:
            shed_pre += (pre_w - m) * e
        if ref is not None:
            shed_unc += (ref - m) * e
    ids = {rows[k][0]: k for k in range(n)}
    jrows = [(ids[pid], job, gpus, ref_pg, tput) for pid, job, gpus, ref_pg, tput in c.execute(
        "select period, job, gpus, ref_tput, tput from ctl_jobs order by period") if pid in ids]
    pre_t, pre_d = {}, {}
    for k, job, gpus, ref_pg, tput in jrows:
        if (k < first and rows[k][1] * speed >= start - pre_window and not (rows[k][6] or 0) > 0
                and tput is not None and tput > 0):
            pre_t[job] = pre_t.get(job, 0.0) + tput * dts[k]
            pre_d[job] = pre_d.get(job, 0.0) + dts[k]
    jobs = {}
    for k, job, gpus, ref_pg, tput in jrows:
        if ref_pg is None or tput is None or gpus is None:
            continue
        if ref_pg * gpus <= 0 or not (first <= k < last):
            continue
        ref = (given[job] if job in given else
               pre_t[job] / pre_d[job] if pre_d.get(job, 0) > 0 else ref_pg * gpus)
        j = jobs.setdefault(job, {"tput": 0.0, "ref": 0.0, "lost": 0.0})
        j["tput"] += tput * dts[k]
        j["ref"] += ref * dts[k]
        j["lost"] += (ref - min(tput, ref)) * dts[k] * speed
    out = {
        "pre_event_w": pre_w,
        "energy_shed_kwh": shed_pre,
        "energy_shed_uncapped_kwh": shed_unc,
        "per_job": {name: {"performance": j["tput"] / j["ref"], "tokens_lost": j["lost"]}
                    for name, j in sorted(jobs.items())},
    }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
