#!/usr/bin/python3
"""bench/gen_telemetry.py DIR SIZE_MB — write DIR/dcgmi.txt (`dcgmi dmon`, 8 GPUs, 5 fields)
and DIR/smi.csv (`nvidia-smi --query-gpu=... --format=csv -lms 100`, 8 GPUs, units in the
cells) of at least SIZE_MB x 10^6 bytes each, with time moving forward (the CSV crosses
midnight) and values that vary row to row. Existing files of the right size are kept.
Synthetic data for the ingest benchmark only."""
import os
import sys

d, mb = sys.argv[1], int(sys.argv[2])
target = mb * 1000 * 1000
GPUS = 8


def write(path, header, rows):
    if os.path.exists(path) and os.path.getsize(path) >= target:
        return
    n = 0
    with open(path + ".part", "w") as f:
        f.write(header)
        for chunk in rows():
            f.write(chunk)
            n += len(chunk)
            if n >= target:
                break
    os.replace(path + ".part", path)


def dcgmi_rows():
    tick = 0
    while True:
        out = []
        for _ in range(2000):
            for g in range(GPUS):
                i = tick * GPUS + g
                out.append("GPU %d      %.3f      %d           %d           %.3f        %.3f\n" % (
                    g, 250 + (i * 7) % 450 + 0.125, 9876543210 + tick * 3000 + g,
                    40 + i % 40, (i % 1000) / 1000, (i % 997) / 1000))
            tick += 1
        yield "".join(out)


def smi_rows():
    tick = 0  # 100 ms
    start = 86400 - 600  # ten minutes before midnight
    while True:
        out = []
        for _ in range(2000):
            ms = tick * 100
            s = start + ms // 1000
            day, sod = 14 + s // 86400, s % 86400
            ts = "2025/05/%02d %02d:%02d:%02d.%03d" % (day, sod // 3600, sod // 60 % 60,
                                                      sod % 60, ms % 1000)
            for g in range(GPUS):
                i = tick * GPUS + g
                out.append("%s, %d, %.2f W, 700.00 W, %d %%, %d\n" % (
                    ts, g, 200 + (i * 7) % 450 + 0.25, i % 101, 40 + i % 40))
            tick += 1
        yield "".join(out)


os.makedirs(d, exist_ok=True)
write(d + "/dcgmi.txt",
      "#Entity    POWER        TOTEC                TMPTR        SMACT        DRAMA\nID\n",
      dcgmi_rows)
write(d + "/smi.csv", "timestamp, index, power.draw [W], power.limit [W], "
      "utilization.gpu [%], temperature.gpu\n", smi_rows)
