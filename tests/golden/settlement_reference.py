#!/usr/bin/python3
"""Independent settlement of a power event from pfi control's audit log (SQLite), for
tests/control/grid_settlement.sh: shares no code with src/lib/control/settlement.c.

Definitions (README "grid events", pfi/grid.h), from how the controller works: at each
period's tick it first reads the cluster (power, each job's tokens/s), then decides that
period's target and caps. So row k's decision (budget_w, ref_w, event, lead, its caps) holds
over [t_k, t_k+1), and the readings that measured that time are row k + 1's; row k's own
readings are of the time before t_k (the previous caps). The latest run's first contiguous
event rows; a row's time lasts until the next row (the last as long as the one before; its
time has no reading: missing); event time = log time x speed. Pre-event baseline =
time-weighted mean of the power read over the pre-event rows' times that start within the
pre-event window and are no ramp's lead; kWh shed = sum over the event rows' times of
(baseline - power read over it) x dt x speed / 3.6e6, against the pre-event level and against
ref_w (the uncapped prediction of that row); per job, from ctl_jobs (a job row holds that
row's reading): reference = the time-weighted mean of the job's tput > 0 read over the
pre-event window's times (those of the power baseline), else ref_tput (per GPU) x gpus as
logged with the reading; over the event rows' times read with a reference (ref_tput > 0) and
a tput: performance = sum tput dt / sum ref dt, tokens lost = sum (ref - min(tput, ref)) dt x
speed.

With REFERENCE.csv (job,tput_tok_s: pfi report --settlement --reference), a job listed there
has that reference instead.

Per interval (--interval S, default 300): the event (first event period's start to the first
period after it, in event time) cut into S-second intervals from its start, the last one
shorter; each event row's power (read by the next row) held over [t, t + dt) x speed and
integrated over the part of it inside each interval (a period straddling a boundary counts in both, by time): target kWh
(budget_w), measured kWh, kWh shed against the pre-event level and against ref_w. An event
row's time without a power read over it (NULL, or 0 W: a stale reading; or the log ends) counts
in no measured or shed sum (nor in the pre-event baseline): missing_periods says how many.

usage: settlement_reference.py [--interval S] AUDIT.db SPEED PRE_WINDOW_S [REFERENCE.csv]
       -> JSON on stdout
"""
import csv
import json
import math
import sqlite3
import sys


def main():
    args = sys.argv[1:]
    interval = 300.0
    if args[:1] == ["--interval"]:
        interval, args = float(args[1]), args[2:]
    db, speed, pre_window = args[0], float(args[1]), float(args[2])
    given = {}
    if len(args) > 3:
        given = {r["job"]: float(r["tput_tok_s"]) for r in csv.DictReader(open(args[3]))}
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
    T, EV, BUDGET, MEAS, REF, LEAD = 1, 2, 3, 4, 5, 6
    dts = [rows[k + 1][T] - rows[k][T] for k in range(n - 1)]
    dts.append(dts[-1] if dts else 0.0)

    def read_over(k):
        """The power read over row k's time: the next row's reading (None: none, or 0 W)."""
        m = rows[k + 1][MEAS] if k + 1 < n else None
        return m if m is not None and m > 0 else None

    first = next(k for k in range(n) if rows[k][EV])
    last = first
    while last < n and rows[last][EV]:
        last += 1
    start = rows[first][T] * speed
    end = rows[last][T] * speed if last < n else (rows[last - 1][T] + dts[last - 1]) * speed

    def in_window(k):
        return (k < first and rows[k][T] * speed >= start - pre_window
                and not (rows[k][LEAD] or 0) > 0)

    pre = [(read_over(k), dts[k]) for k in range(first) if in_window(k) and read_over(k)]
    pre_w = sum(m * d for m, d in pre) / sum(d for _, d in pre) if pre else None
    shed_pre = shed_unc = 0.0
    missing = 0
    for k in range(first, last):
        m = read_over(k)
        if m is None:
            missing += 1
            continue
        e = dts[k] * speed / 3.6e6
        if pre_w is not None:
            shed_pre += (pre_w - m) * e
        if rows[k][REF] is not None:
            shed_unc += (rows[k][REF] - m) * e
    n_iv = max(1, math.ceil((end - start) / interval - 1e-9))
    ivs = []
    for i in range(n_iv):
        lo, hi = start + i * interval, min(start + (i + 1) * interval, end)
        iv = {"start_s": lo, "end_s": hi, "target_kwh": 0.0, "measured_kwh": 0.0,
              "shed_kwh": 0.0 if pre_w is not None else None, "shed_uncapped_kwh": 0.0,
              "missing_periods": 0}
        for k in range(first, last):
            a, b = rows[k][T] * speed, (rows[k][T] + dts[k]) * speed
            h = (min(b, hi) - max(a, lo)) / 3.6e6  # kWh per W
            if h <= 0:
                continue
            m = read_over(k)
            if rows[k][BUDGET] is not None:
                iv["target_kwh"] += rows[k][BUDGET] * h
            if m is None:
                iv["missing_periods"] += 1
                continue
            iv["measured_kwh"] += m * h
            if pre_w is not None:
                iv["shed_kwh"] += (pre_w - m) * h
            if rows[k][REF] is not None:
                iv["shed_uncapped_kwh"] += (rows[k][REF] - m) * h
        ivs.append(iv)
    # each job row holds the reading of its row: it measured the previous row's time
    ids = {rows[k][0]: k for k in range(n)}
    jrows = [(ids[pid] - 1, job, gpus, ref_pg, tput) for pid, job, gpus, ref_pg, tput in
             c.execute("select period, job, gpus, ref_tput, tput from ctl_jobs order by period")
             if pid in ids and ids[pid] > 0]
    pre_t, pre_d = {}, {}
    for k, job, gpus, ref_pg, tput in jrows:
        if in_window(k) and tput is not None and tput > 0:
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
        "missing_periods": missing,
        "intervals": ivs,
        "per_job": {name: {"performance": j["tput"] / j["ref"], "tokens_lost": j["lost"]}
                    for name, j in sorted(jobs.items())},
    }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
