#!/usr/bin/python3
"""The SRP event's six jobs (scripts/grid-event-jobs.csv: the DESIGN section 7 model fitted to
dvfs_sweep.csv, without the emulated GPUs' spread) at 30.2 % below their top power, each job
at least 1 - its tier's allowance (Flex 1/2/3: 10/25/50 %, held as a static floor): the
weighted and the mean performance of `equal` (every job the same fraction of its power),
`fair-headroom` (the same fraction of its headroom above its floor) and of the optimum of each
objective (caps in 1 W steps, a Lagrangian search): weighted (Σ g perf), mean (Σ perf), and
balanced (their sum). Shows that the weighted optimum's mean is below equal's, the mean
optimum's weighted score below equal's, and the balanced optimum above equal on both
(DESIGN section 6; docs/commands/pfi-demo.md). Needs NumPy.
usage: grid-event-objectives.py [JOBS_CSV]"""
import csv
import sys

import numpy as np

JOBS = sys.argv[1] if len(sys.argv) > 1 else "scripts/grid-event-jobs.csv"
ALLOW = {"Flex 1": 0.10, "Flex 2": 0.25, "Flex 3": 0.50}
TIERS = {"ft_llama_8b_p3-c6rr6ijz": "Flex 2", "infer_llama_8b_32g-ssac4bap": "Flex 3",
         "infer_llama_8b_48g-hgfu2h87": "Flex 1", "infer_llama_8b_48g-xhganfr6": "Flex 2",
         "pt_mpt_13b_sm-gnn16mkt": "Flex 3", "pt_mpt_7b_fast-qryepi9o": "Flex 3"}


def model(c, a, ps, pu, g, fmin):
    """(per-GPU power, relative throughput) under cap c (scripts/grid-event-fit.py's model)."""
    rel = 1.0 if c >= pu else (((c - ps) / (pu - ps)) ** (1 / g) if c > ps else 0.0)
    rel = max(rel, fmin / 1980)
    return (ps + (pu - ps) * rel ** g if c < pu else pu), 1.0 / (a / rel + (1 - a))


def main():
    caps = np.arange(100, 401, 1.0)
    jobs = []
    for r in csv.DictReader(l for l in open(JOBS) if not l.startswith("#")):
        pts = [model(c, float(r["alpha"]), float(r["ps_w"]), float(r["pu_w"]),
                     float(r["gamma"]), float(r["fmin_mhz"])) for c in caps]
        g = int(r["gpus"])
        jobs.append({"g": g, "P": np.array([p for p, _ in pts]) * g,
                     "T": np.array([t for _, t in pts]), "floor": 1 - ALLOW[TIERS[r["job"]]]})
    top = sum(j["P"][-1] for j in jobs)
    budget = (1 - 0.302) * top
    G, n = sum(j["g"] for j in jobs), len(jobs)

    def scores(perf):
        return (sum(j["g"] * p for j, p in zip(jobs, perf)) / G, sum(perf) / n)

    def at_power(j, p):
        return j["T"][max(np.searchsorted(j["P"], p, side="right") - 1, 0)]

    def optimum(weight):
        lo, hi = 0.0, 1.0
        for _ in range(200):
            lam = (lo + hi) / 2
            pick = []
            for j in jobs:
                v = weight(j) * j["T"] - lam * j["P"]
                v[j["T"] < j["floor"] - 1e-12] = -1e18
                pick.append(int(np.argmax(v)))
            if sum(j["P"][i] for j, i in zip(jobs, pick)) <= budget:
                hi, best = lam, pick
            else:
                lo = lam
        return [j["T"][i] for j, i in zip(jobs, best)]

    f = budget / top
    equal = [at_power(j, f * j["P"][-1]) for j in jobs]
    lo_p = [j["P"][int(np.argmax(j["T"] >= j["floor"]))] for j in jobs]
    h = (top - budget) / sum(j["P"][-1] - lp for j, lp in zip(jobs, lo_p))
    fair = [at_power(j, j["P"][-1] - h * (j["P"][-1] - lp)) for j, lp in zip(jobs, lo_p)]
    rows = [("equal", equal), ("fair-headroom", fair),
            ("optimum of weighted", optimum(lambda j: j["g"] / G)),
            ("optimum of mean", optimum(lambda j: 1 / n)),
            ("optimum of balanced", optimum(lambda j: j["g"] / G + 1 / n))]
    print(f"{'allocation':22} {'weighted':>9} {'mean':>7}")
    for name, perf in rows:
        w, m = scores(perf)
        print(f"{name:22} {w:9.4f} {m:7.4f}")


if __name__ == "__main__":
    main()
