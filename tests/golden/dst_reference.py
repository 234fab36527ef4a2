#!/usr/bin/python3
"""Inputs for the time-zone checks of tests/cli/truth.sh: one run written three ways.

2 GPUs sampled every 60 s for 3 h across a daylight-saving change in Europe/Berlin, with
nvidia-smi CSV timestamps (zone-less local time, written with Python's zoneinfo, an
independent conversion):
  fall_local.csv   across the fall-back of 2026-10-25 (03:00 CEST -> 02:00 CET: 02:00-02:59
                   printed twice)
  fall_utc.csv     the same samples with UTC timestamps
  spring_local.csv across the spring-forward of 2026-03-29 (02:00 CET -> 03:00 CEST: no
                   02:xx times)
  spring_utc.csv   the same samples in UTC
  fall_iso.csv     the fall-back run with ISO 8601 timestamps and their offsets
  fall_epoch.csv   the same with epoch seconds
  expected.txt     energy_j: the trapezoid energy over the 180 steps of 60 s of both GPUs
                   (the same for all); samples: rows per GPU
Usage: dst_reference.py DIR
"""
import datetime as dt
import sys
import zoneinfo

out = sys.argv[1]
berlin = zoneinfo.ZoneInfo("Europe/Berlin")
utc = dt.timezone.utc


def run(start_utc, name):
    rows = []
    for i in range(181):
        t = start_utc + dt.timedelta(seconds=60 * i)
        for g in range(2):
            rows.append((t, g, 200.0 + 10 * g + (i % 7) * 5.0))
    def write(fname, fmt):
        with open(f"{out}/{fname}", "w") as f:
            f.write("timestamp, index, power.draw [W]\n")
            for t, g, p in rows:
                f.write(f"{fmt(t)}.{g * 5:03d}, {g}, {p:.2f} W\n" if fmt is not None else "")
    def local(t):
        return t.astimezone(berlin).strftime("%Y/%m/%d %H:%M:%S")
    def in_utc(t):
        return t.astimezone(utc).strftime("%Y/%m/%d %H:%M:%S")
    write(f"{name}_local.csv", local)
    write(f"{name}_utc.csv", in_utc)
    with open(f"{out}/{name}_iso.csv", "w") as f:
        f.write("timestamp, index, power.draw [W]\n")
        for t, g, p in rows:
            lt = t.astimezone(berlin)
            off = lt.strftime("%z")
            f.write(f"{lt.strftime('%Y-%m-%dT%H:%M:%S')}.{g * 5:03d}{off[:3]}:{off[3:]}, {g}, {p:.2f} W\n")
    with open(f"{out}/{name}_epoch.csv", "w") as f:
        f.write("timestamp, index, power.draw [W]\n")
        for t, g, p in rows:
            f.write(f"{t.timestamp() + g * 0.005:.3f}, {g}, {p:.2f} W\n")
    # trapezoid energy per GPU over consecutive samples 60 s apart
    e = 0.0
    for g in range(2):
        ps = [p for (_, gg, p) in rows if gg == g]
        e += sum((a + b) / 2 * 60 for a, b in zip(ps, ps[1:]))
    return e


e_fall = run(dt.datetime(2026, 10, 24, 23, 30, tzinfo=utc), "fall")
e_spring = run(dt.datetime(2026, 3, 29, 0, 0, tzinfo=utc), "spring")
with open(f"{out}/expected.txt", "w") as f:
    f.write(f"fall_energy_j {e_fall:.3f}\nspring_energy_j {e_spring:.3f}\nsamples 181\n")
