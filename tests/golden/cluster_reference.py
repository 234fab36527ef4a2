#!/usr/bin/python3
"""Inputs and pandas reference numbers for tests/cluster/cluster.sh (ctest cli_cluster).

Writes, into the directory given:
  node-a.csv, node-b.csv      nvidia-smi --query-gpu=timestamp,index,uuid,power.draw CSVs of a
                              2-node job, each numbering its GPUs 0-7 (node-b's rows 0.2 s later)
  node-a.dcgmi, node-b.dcgmi  dcgmi dmon -e 155 of the same job (index only, no time)
  expected.txt                'name value' lines: the job power pandas gets by summing per
                              timestamp over (host, uuid) (CSV) and (host, gpu) (dcgmi), the
                              mean over timestamps (q = 1) and the mean of the top 10 % (q = 0.1,
                              ceil(0.1 n) timestamps, pfi's steady state), and the GPU count.
Usage: cluster_reference.py DIR
"""
import math
import random
import sys

import pandas as pd

out = sys.argv[1]
random.seed(14)
N = 40  # samples per GPU
rows = []
for h, host in enumerate(["node-a", "node-b"]):
    for s in range(N):
        for g in range(8):
            p = round(150 + 20 * g + 60 * h + 40 * math.sin(s / 5.0) + random.uniform(0, 30), 2)
            rows.append({"host": host, "gpu": g, "s": s, "uuid": f"GPU-{h:x}{g:x}{s % 1:x}c0ffee-0000-4000-8000-00000000{h}{g}{g}{g}",
                         "t": 1767268800.0 + s + 0.2 * h + 0.003 * g, "power": p})
df = pd.DataFrame(rows)
for host, d in df.groupby("host"):
    with open(f"{out}/{host}.csv", "w") as f:
        f.write("timestamp, index, uuid, power.draw [W]\n")
        for r in d.itertuples():
            ts = pd.Timestamp(r.t, unit="s")
            f.write(f"{ts.strftime('%Y/%m/%d %H:%M:%S')}.{ts.microsecond // 1000:03d}, {r.gpu}, "
                    f"{r.uuid}, {r.power:.2f} W\n")
    with open(f"{out}/{host}.dcgmi", "w") as f:
        f.write("#Entity   POWER\nID\n")
        for r in d.sort_values(["s", "gpu"]).itertuples():
            f.write(f"GPU {r.gpu}     {r.power:.3f}\n")


def steady(job):
    k = len(job)
    m = max(1, math.ceil(0.1 * k - 1e-12))
    return job.mean(), job.nlargest(m).mean(), k


# CSV: the timestamp is the capture loop (rows within 0.5 s); sum over (host, uuid)
df["loop"] = (df.t - df.t.min()).round().astype(int)
per = df.groupby(["loop", "host", "uuid"]).power.mean()
job = per.groupby(level="loop").sum()
mean_all, top, k = steady(job)
# dcgmi: nominal time = sample index per GPU; sum over (host, gpu)
job2 = df.groupby(["s", "host", "gpu"]).power.mean().groupby(level="s").sum()
mean2, top2, k2 = steady(job2)
with open(f"{out}/expected.txt", "w") as f:
    f.write(f"gpus {df.groupby(['host', 'uuid']).ngroups}\n")
    f.write(f"csv_power_q1 {mean_all:.4f}\ncsv_power_q01 {top:.4f}\ncsv_timestamps {k}\n")
    f.write(f"dcgmi_power_q1 {mean2:.4f}\ndcgmi_power_q01 {top2:.4f}\ndcgmi_timestamps {k2}\n")
