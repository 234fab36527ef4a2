#!/usr/bin/python3
"""bench/allocate's end-to-end reference for `pfi allocate` (issue 18 item 8).

    alloc_cli_reference.py gen N FILE     write a jobs CSV of N jobs (6-point concave curves,
                                          caps 200..700 W, 8 GPUs, seed fixed) as pfi reads it
    alloc_cli_reference.py run FILE OUT   what a user would write in NumPy: read the CSV
                                          (numpy.loadtxt), segments, argsort by slope, cumsum
                                          to a 30 % reduction budget, write each job's cap as
                                          CSV; the whole process is timed by the caller
"""
import sys

import numpy as np


def gen(n, path):
    rng = np.random.default_rng(7)
    caps = np.arange(200, 701, 100, dtype=float)
    rho = rng.uniform(0.85, 1.0, n)
    e = rng.uniform(0.2, 0.9, n)
    tref = rng.uniform(20000, 100000, n)
    with open(path, "w") as f:
        f.write("job,class,gpus,cap_w,power_w,tput_tok_s\n")
        for j in range(n):
            p = 8 * caps * rho[j]
            t = tref[j] * (p / p[-1]) ** e[j]
            f.write("".join(f"job{j},dense,8,{c:.0f},{pp:.3f},{tt:.3f}\n"
                            for c, pp, tt in zip(caps, p, t)))


def run(path, out):
    d = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(3, 4, 5))
    k = 6
    cap, p, t = (d[:, i].reshape(-1, k) for i in range(3))
    budget = 0.7 * p[:, -1].sum()
    dp, dt = np.diff(p, axis=1), np.diff(t, axis=1)
    slope = (dt / dp).ravel()
    order = np.argsort(-slope, kind="stable")
    width = dp.ravel()[order]
    room = budget - p[:, 0].sum()
    c = np.cumsum(width)
    take = np.clip(room - (c - width), 0, width)
    got = np.zeros_like(slope)
    got[order] = take
    extra = got.reshape(dp.shape).sum(axis=1)
    power = p[:, 0] + extra
    capw = np.array([np.interp(pw, pr, cr) for pw, pr, cr in zip(power, p, cap)])
    np.savetxt(out, np.column_stack([capw, power]), delimiter=",", fmt="%.10g",
               header="cap_w,power_w", comments="")


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(int(sys.argv[2]), sys.argv[3])
    else:
        run(sys.argv[2], sys.argv[3])
