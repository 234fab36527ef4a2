#!/usr/bin/python3
"""bench/control_hier.py — the two-level row of bench/control.sh from real controllers.

usage: control_hier.py LABEL AGENTS GPUS SITE_OUT CHANGE_TICKS CPU_FILE RACK_DB...
       control_hier.py --lead S RACK_DB...

--lead S: sleep until S seconds before the racks' next tick (the earliest rack's: its tick
taken from its audit log as below), so that a site started then ticks, and orders, S s ahead
of the racks (the controllers' phases aligned; unaligned, a rack waits up to a period more).

A site controller (`pfi control --children`) over rack controllers (`pfi control --agents
... --listen 0 --db RACK_DB`), each ticking on its own clock. SITE_OUT: the site's period lines,
each stamped (Unix s) as it came — once the site's PUT /v1/budget were answered: the order's
time; CHANGE_TICKS: the site's ticks at
which its schedule changes the budget (comma-separated). CPU_FILE: lines "NAME CPU_S PERIODS
RSS_KIB" (NAME site or rackQ; CPU_S the process's CPU over PERIODS periods, from
/proc/PID/schedstat; RSS_KIB its peak resident memory, VmHWM).

For each change and each rack: the rack's first period after the site's order whose budget
shows the change (the event flag flipped, or the budget moved by more than 3 %); the change's
latency is the last rack's end of that period (its audit wall_s: caps confirmed) less the
site's order (so it includes the wait for the rack's period to start: a rack starts one when
a PUT /v1/budget changes its budget, at the earliest a tenth of a period after its last began;
before that change, each controller ticked on its own clock and a rack waited for its tick,
up to a period). The
rack's own part, from its tick to its caps confirmed: wall_s less its tick, the tick taken as
the rack's fastest period (the least wall_s - t_s over its periods), so the part is the
change period's time beyond the rack's fastest period's. Prints one row of the bench's table
(CPU: the median and the busiest rack's mean per period; RSS: the largest rack's) and a line
of detail.
"""
import os
import sqlite3
import statistics
import sys
import time


def rack_rows(path):
    c = sqlite3.connect(path)
    rows = c.execute("select t_s, wall_s, event, budget_w, unconfirmed from ctl_periods "
                     "order by id").fetchall()
    c.close()
    return min(r[1] - r[0] for r in rows), rows


def lead(s, paths):
    phase = min(rack_rows(p)[0] % 1.0 for p in paths)
    now = time.time()
    time.sleep((phase - s - now) % 1.0)
    return 0


def main(argv):
    if argv[1] == "--lead":
        return lead(float(argv[2]), argv[3:])
    label, agents, gpus = argv[1], int(argv[2]), int(argv[3])
    order_at = {}
    for line in open(argv[4]):
        f = line.split()
        if len(f) > 2 and f[1] != "t_s":
            order_at[round(float(f[1]))] = float(f[0])
    ticks = [int(x) for x in argv[5].split(",") if x]
    lead_s = float(os.environ.get("BENCH_LEAD", "0.3"))
    cpu = {}
    for line in open(argv[6]):
        f = line.split()
        if len(f) == 4:
            cpu[f[0]] = (float(f[1]), int(f[2]), int(f[3]))
    racks = []
    for path in argv[7:]:
        racks.append(rack_rows(path))
    lat, part, unconf, missing = [], [], 0, 0
    waits = []
    for k in ticks:
        if k not in order_at:
            missing += 1
            continue
        order = order_at[k]
        worst = worst_part = None
        for start, rows in racks:
            before = [r for r in rows if r[1] <= order]
            prev = before[-1] if before else None
            hit = None
            for r in rows:
                if r[1] <= order:
                    continue
                if prev is None or r[2] != prev[2] or (
                        r[3] is not None and prev[3] is not None
                        and abs(r[3] - prev[3]) > 0.03 * max(abs(prev[3]), 1.0)):
                    hit = r
                    break
            if hit is None:
                missing += 1
                continue
            unconf += hit[4] or 0
            d = hit[1] - order
            p = hit[1] - (start + hit[0])
            worst = d if worst is None else max(worst, d)
            waits.append(d - p)
            worst_part = p if worst_part is None else max(worst_part, p)
        if worst is not None:
            lat.append(worst)
            part.append(worst_part)
    rack_cpu = [v[0] / v[1] for n, v in cpu.items() if n != "site" and v[1] > 0]
    rack_rss = [v[2] for n, v in cpu.items() if n != "site"]
    site = cpu.get("site")
    if not lat or not rack_cpu:
        print(f"{label:<14} {agents:7d} {gpus:6d}   (no change seen in the racks' audit logs)")
        return 1
    ms = lambda x: x * 1e3
    print(f"{label:<14} {agents:7d} {gpus:6d} {ms(max(lat)):12.1f} {ms(statistics.median(lat)):12.1f}"
          f" {ms(statistics.median(rack_cpu)):10.1f} {ms(max(rack_cpu)):10.1f}"
          f" {max(rack_rss) / 1024:9.1f} {unconf:8d}   ({len(racks)} pfi control racks, CPU"
          f" mean per period: median rack, busiest; summed over racks {ms(sum(rack_cpu)):.1f} ms;"
          f" site {ms(site[0] / site[1]) if site else float('nan'):.1f} ms,"
          f" {site[2] / 1024 if site else float('nan'):.1f} MiB)")
    print(f"{'':14} the racks' own part (tick to caps confirmed, beyond their fastest period): max {ms(max(part)):.1f} ms,"
          f" median {ms(statistics.median(part)):.1f} ms; the rest is the wait for the rack's"
          f" period to start (at once on a changed budget, at the earliest a tenth of a period after its last): median {ms(statistics.median(waits)):.0f} ms (the site started to lead"
          f" the racks by {lead_s * 1e3:.0f} ms){'; ' + str(missing) + ' rack change(s) not found' if missing else ''}")
    return 1 if missing or unconf else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
