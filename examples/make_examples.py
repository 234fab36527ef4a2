#!/usr/bin/env python3
"""Writes the small SYNTHETIC telemetry, log and runs files the README and docs/ examples
name (examples/README.md lists them). Deterministic: run it again and nothing changes.

    /usr/bin/python3 examples/make_examples.py [DIR]     (default: the folder of this script)

Every number here is made up to show a reader's behaviour; none is a measurement.
"""
import os
import random
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def write(name, text):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        f.write(text)


def runs_csv():
    """A runs table with standard errors: two 8-GPU groups at caps 700..300 W, one
    compute-bound, one memory-bound (pfi analyze with the mapping options)."""
    rng = random.Random(1)
    rows = ["model,task,gpus,job_class,cap_w,power_w,power_se_w,tokens_per_s,tokens_per_s_se"]
    for model, task, cls, pfi in (("llama-8b", "pt", "dense", 1.35),
                                  ("mixtral-8x7b", "ft", "moe-ft", 2.1)):
        for cap in (700, 600, 500, 400, 300):
            power = 8 * min(cap * 0.95, 640.0)
            tput = 80000.0 * (1 - (1 - power / (8 * 640.0)) / pfi)
            rows.append("%s,%s,8,%s,%d,%.1f,%.1f,%.0f,%.0f" % (
                model, task, cls, cap, power * (1 + rng.gauss(0, 0.002)), power * 0.004,
                tput * (1 + rng.gauss(0, 0.002)), tput * 0.005))
    write("runs.csv", "\n".join(rows) + "\n")


def nodes():
    """One 16-GPU job on two hosts, each file numbering its GPUs 0-7 (no host column)."""
    rng = random.Random(2)
    for host in ("node-a", "node-b"):
        rows = ["timestamp, index, power.draw [W], utilization.gpu [%]"]
        for t in range(40):
            for g in range(8):
                rows.append("2025/05/14 10:%02d:%02d.%03d, %d, %.2f W, %d %%" % (
                    t // 60, t % 60, 3 * g, g, 270.0 + rng.uniform(-4, 4), 97))
        write(host + ".csv", "\n".join(rows) + "\n")


def caps():
    """Two GPUs at a 300 W cap for 20 s: at 4 timestamps the enforced limit is 350 W (the
    cap was lost), at 2 a HW thermal slowdown (0x40) holds the clocks."""
    rows = ["timestamp, index, power.draw [W], enforced.power.limit [W], "
            "clocks_event_reasons.active"]
    for t in range(20):
        lost = 6 <= t < 10
        hot = t in (14, 15)
        for g in range(2):
            power = (330.0 if lost else 290.5) if not hot else 250.0
            rows.append("2025/05/14 11:00:%02d.%03d, %d, %.2f W, %.2f W, %s" % (
                t, 2 * g, g, power, 350.0 if lost else 300.0, "0x40" if hot else "0x04"))
    write("caps.csv", "\n".join(rows) + "\n")


def dcgmi_and_megatron():
    """An 8-GPU job at 500 W: `dcgmi dmon -e 155,1005,204,1004 -d 5000` (no timestamps:
    --interval 5) and the Megatron-LM log of the same 10 minutes."""
    rng = random.Random(3)
    rows = []
    for t in range(120):
        if t % 20 == 0:
            rows += ["#Entity   POWER        DRAMA        MCUTL        TENSO", "ID"]
        for g in range(8):
            rows.append("GPU %d     %-12.3f %-12.3f %-12d %.3f" % (
                g, 488.0 + rng.uniform(-6, 6), 0.42 + rng.uniform(-0.02, 0.02),
                34 + rng.randint(-2, 2), 0.55 + rng.uniform(-0.02, 0.02)))
    write("dcgmi_500.txt", "\n".join(rows) + "\n")
    log = []
    for k in range(1, 61):
        log.append(" [2025-05-14 10:%02d:%02d] iteration %8d/    1000 | consumed samples: %10d | "
                   "elapsed time per iteration (ms): %.1f | global batch size:   256 | "
                   "lm loss: 2.5E+00 | number of skipped iterations:   0 | "
                   "number of nan iterations:   0 |" % (
                       k * 10 // 60, k * 10 % 60, k * 10, k * 10 * 256,
                       1000.0 * (1 + rng.gauss(0, 0.005))))
    write("megatron_500.log", "\n".join(log) + "\n")


def noheader():
    """`nvidia-smi --query-gpu=timestamp,index,power.draw --format=csv,noheader`: no header,
    so pfi ingest needs --fields."""
    rng = random.Random(4)
    rows = []
    for t in range(30):
        for g in range(2):
            rows.append("2025/05/14 12:00:%02d.%03d, %d, %.2f W" % (
                t, g, g, 640.0 + rng.uniform(-5, 5)))
    write("noheader.csv", "\n".join(rows) + "\n")


def glitch():
    """nvidia-smi CSV of one GPU whose third power cell is a glitch (99999999.00 W): out of
    range, dropped, not clamped."""
    rows = ["timestamp, index, power.draw [W]"]
    for t, w in enumerate((250.0, 252.0, 99999999.0, 253.0)):
        rows.append("2026/01/05 10:00:%02d.000, 0, %.2f W" % (t, w))
    write("glitch.csv", "\n".join(rows) + "\n")


def fallback():
    """nvidia-smi CSV of 2 GPUs sampled every minute in Europe/Berlin's local time (zone-less,
    nvidia-smi's default) across the fall-back of 2025-10-26: 00:30 to 01:30 UTC, that is
    02:30 to 02:59 CEST, then 02:00 to 02:30 CET — the hour 02:00-03:00 is written twice.
    gpu0 draws 300 W, gpu1 200 W, except 10 W more at every tenth minute."""
    rows = ["timestamp, index, power.draw [W]"]
    for m in range(61):
        utc = 30 + m                      # minutes after 00:00 UTC
        local = utc + (120 if utc < 60 else 60)  # CEST is UTC+2, CET UTC+1
        for g in range(2):
            w = (300.0 if g == 0 else 200.0) + (10.0 if m % 10 == 0 else 0.0)
            rows.append("2025/10/26 %02d:%02d:00.%03d, %d, %.2f W" % (
                local // 60, local % 60, 5 * g, g, w))
    write("fallback.csv", "\n".join(rows) + "\n")


def query_range():
    """The answer of Prometheus' HTTP API to a query_range for DCGM_FI_DEV_POWER_USAGE over
    two nodes (one GPU each, 15 s steps): node-b's third value is NaN (a missed scrape)."""
    series = []
    for host, uuid, base in (("node-a", "GPU-0a0a0a0a-0000-0000-0000-000000000000", 300),
                             ("node-b", "GPU-0b0b0b0b-0000-0000-0000-000000000000", 200)):
        values = []
        for k in range(4):
            v = "NaN" if host == "node-b" and k == 2 else "%d" % (base + 10 * k)
            values.append('[%d,"%s"]' % (1767268800 + 15 * k, v))
        series.append('{"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0","UUID":"%s",'
                      '"Hostname":"%s"},"values":[%s]}' % (uuid, host, ",".join(values)))
    write("query_range.json", '{"status":"success","data":{"resultType":"matrix","result":[\n'
          + ",\n".join(series) + "\n]}}\n")


if __name__ == "__main__":
    runs_csv()
    nodes()
    caps()
    dcgmi_and_megatron()
    noheader()
    glitch()
    fallback()
    query_range()
