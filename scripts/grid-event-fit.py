#!/usr/bin/python3
"""Fit the DESIGN section 7 job model to each SRP-event job's power-cap sweep
(data/emerald_phoenix_2025/dvfs_sweep.csv) and print scripts/grid-event-jobs.csv's rows.
The model, per GPU, under a cap c below the uncapped draw pu: relative clock
rel = ((c - ps) / (pu - ps))^(1/gamma), at least fmin/fmax (fmax 1980 MHz); power
ps + (pu - ps) rel^gamma; step time alpha / rel + (1 - alpha); throughput 1 / step.
usage: grid-event-fit.py [DATA_DIR]"""
import csv
import math
import sys

DATA = sys.argv[1] if len(sys.argv) > 1 else "data/emerald_phoenix_2025"
JOBS = [("ft_llama_8b_p3-c6rr6ijz", "dense-ft", "ft_llama_8b_p3"),
        ("infer_llama_8b_32g-ssac4bap", "dense", "infer_llama_8b_32g"),
        ("infer_llama_8b_48g-hgfu2h87", "dense", "infer_llama_8b_48g"),
        ("infer_llama_8b_48g-xhganfr6", "dense", "infer_llama_8b_48g"),
        ("pt_mpt_13b_sm-gnn16mkt", "dense", "pt_mpt_13b_sm"),
        ("pt_mpt_7b_fast-qryepi9o", "dense", "pt_mpt_7b_fast")]


def model(c, a, ps, pu, g, fmin):
    rel = 1.0 if c >= pu else (((c - ps) / (pu - ps)) ** (1 / g) if c > ps else 0.0)
    rel = max(rel, fmin)
    return 1.0 / (a / rel + (1 - a))


def main():
    sweeps = {}
    for r in csv.DictReader(open(f"{DATA}/dvfs_sweep.csv")):
        sweeps.setdefault(r["Workload"], []).append(
            (float(r["GPU power cap"]), float(r["power per GPU"]), float(r["throughput"]),
             float(r["total GPU power"])))
    print("job,class,gpus,sweep,alpha,pu_w,ps_w,gamma,fmin_mhz,tput")
    for job, cls, sweep in JOBS:
        pts = sorted(sweeps[sweep])
        cap, pu, t0, total = pts[-1]
        best = None
        for a in [i / 100 for i in range(5, 101)]:
            for psf in [i / 100 for i in range(0, 60, 2)]:
                for g in [1, 1.25, 1.5, 2, 2.5, 3, 4]:
                    for fmin in [0.05, 0.1, 0.174, 0.25]:
                        err = sum((model(c, a, psf * pu, pu, g, fmin) - t / t0) ** 2
                                  for c, _, t, _ in pts[:-1])
                        if best is None or err < best[0]:
                            best = (err, a, psf, g, fmin)
        err, a, psf, g, fmin = best
        print(f"{job},{cls},{round(total / pu)},{sweep},{a},{pu:.1f},{psf * pu:.1f},{g},"
              f"{round(fmin * 1980)},{t0 * 1000:.1f}", file=sys.stdout)
        print(f"# {job}: RMSE {math.sqrt(err / (len(pts) - 1)):.4f}", file=sys.stderr)


if __name__ == "__main__":
    main()
