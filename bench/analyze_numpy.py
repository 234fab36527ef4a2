#!/usr/bin/python3
"""Reference for bench/analyze: PFI_ratio + Monte Carlo CI per sweep group, in NumPy.

Does the same work as `pfi analyze --noise-rel R --draws N --seed S` on the two Zeus
datasets (DESIGN.md section 3), written as a fair, vectorised NumPy program: no Python
loop over draws; per sweep group one standard_normal call draws all draws of all its
points, and the per-draw PFI, the counting mask and the percentiles are array operations.

Usage: analyze_numpy.py DATA_ROOT [--draws 10000] [--noise-rel 0.01] [--seed 1]

stdout: CSV  file,group,pfi_ratio,ci_lo,ci_median,ci_hi,undefined_draws
        (empty fields where a value is undefined: no ratio point / no CI)
stderr: compute_s=<seconds>  (everything after loading + grouping, up to all results)
"""

import argparse
import csv
import glob
import os
import sys
import time

import numpy as np

X_MIN = 0.02            # a cap binds when the power drops by at least this fraction
Q = np.array([2.5, 50.0, 97.5])


def merge_caps(caps, P, T):
    """Sort a group by cap (descending) and merge duplicate caps (mean P, mean T)."""
    caps = np.asarray(caps, dtype=np.float64)
    P = np.asarray(P, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    u, inv = np.unique(caps, return_inverse=True)
    n = np.bincount(inv, minlength=u.size)
    Pm = np.bincount(inv, weights=P, minlength=u.size) / n
    Tm = np.bincount(inv, weights=T, minlength=u.size) / n
    return u[::-1], Pm[::-1], Tm[::-1]


def load_nsdi23(d):
    """summary_power_*.csv: group = (dataset, network, batch_size, optimizer) per file."""
    groups = []
    for path in sorted(glob.glob(os.path.join(d, "summary_power_*.csv"))):
        by = {}
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                key = (r["dataset"], r["network"], r["batch_size"], r["optimizer"])
                g = by.setdefault(key, ([], [], []))
                g[0].append(float(r["power_limit"]))
                g[1].append(float(r["average_power"]))
                g[2].append(1.0 / float(r["time_per_epoch"]))
        for key, (c, p, t) in by.items():       # insertion order = first appearance
            groups.append((os.path.basename(path), "/".join(key), *merge_caps(c, p, t)))
    return groups


def load_jit(d):
    """*.csv: one group per file; cap from window_name; P = sum gpu*_energy / elapsed."""
    groups = []
    for path in sorted(glob.glob(os.path.join(d, "*.csv"))):
        c, p, t = [], [], []
        with open(path, newline="") as f:
            rd = csv.DictReader(f)
            ecols = [k for k in rd.fieldnames if k.startswith("gpu") and k.endswith("_energy")]
            for r in rd:
                el = float(r["elapsed_time"])
                c.append(float(int(r["window_name"].rsplit("_", 1)[1])))
                p.append(sum(float(r[k]) for k in ecols) / el)
                t.append(1.0 / el)
        name = os.path.basename(path)
        groups.append((name, os.path.splitext(name)[0], *merge_caps(c, p, t)))
    return groups


def analyze(groups, draws, noise_rel, seed):
    """Point PFI_ratio for every group; Monte Carlo CI for groups with a ratio point.

    Per CI group, one standard_normal call draws every draw of the reference and of each
    placeable point (every point, counted at the estimate or not) at once, laid out points-major, shape (2*(K+1), draws): rows
    [P0, P1..PK, T0, T1..TK], so every per-point operation runs over a contiguous row of
    `draws` values. (Drawing all groups in one (draws, all columns) matrix was tried: it
    allocates ~0.5 GB of temporaries and was 1.8-7x slower, so it would be unfair to NumPy.)
    The generator is shared across groups in file order, so results depend on the seed only.
    """
    G = len(groups)
    pfi = np.full(G, np.nan)
    ci = np.full((G, 3), np.nan)
    undef = np.full(G, -1, dtype=np.int64)            # -1: no CI (no ratio point)
    rng = np.random.default_rng(seed)
    for i, (_, _, _caps, P, T) in enumerate(groups):
        P0, T0, Pk, Tk = P[0], T[0], P[1:], T[1:]
        x = (P0 - Pk) / P0
        y = (T0 - Tk) / T0
        ok = (x >= X_MIN) & (y > 0)
        K = int(np.count_nonzero(ok))
        if K == 0:
            continue                                    # PFI undefined, no draws
        pfi[i] = np.mean(x[ok] / y[ok])

        # The whole estimator is resampled (as pfi does): every point with a power and a
        # throughput is drawn, not only the ratio points, and the exclusion rules are applied
        # again in each draw. Each value drawn from N(value, se), se = noise_rel * value.
        placeable = np.isfinite(Pk) & np.isfinite(Tk)
        K = int(np.count_nonzero(placeable))
        val = np.concatenate(([P0], Pk[placeable], [T0], Tk[placeable]))[:, None]
        z = rng.standard_normal((2 * (K + 1), draws))
        z *= noise_rel * val
        z += val
        P0d, Pkd = z[0], z[1:K + 1]
        T0d, Tkd = z[K + 1], z[K + 2:]
        xd = (P0d - Pkd) / P0d                          # (K, draws)
        yd = (T0d - Tkd) / T0d
        okd = (xd >= X_MIN) & (yd > 0)
        r = np.divide(xd, yd, out=np.zeros_like(xd), where=okd)
        n = np.count_nonzero(okd, axis=0)               # counting points per draw
        s = r.sum(axis=0)
        dm = (n > 0) & (P0d > 0) & (T0d > 0)
        v = s[dm] / n[dm]                               # defined draws only
        undef[i] = draws - v.size
        if v.size:
            ci[i] = np.percentile(v, Q)
    return pfi, ci, undef


def fmt(v):
    return "" if not np.isfinite(v) else repr(float(v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data_root")
    ap.add_argument("--draws", type=int, default=10000)
    ap.add_argument("--noise-rel", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.draws < 1 or not a.noise_rel >= 0:
        ap.error("--draws must be >= 1 and --noise-rel >= 0")

    groups = load_nsdi23(os.path.join(a.data_root, "zeus_nsdi23_power"))
    groups += load_jit(os.path.join(a.data_root, "zeus_jit_profile"))
    if not groups:
        sys.exit("analyze_numpy: no sweep groups found under " + a.data_root)

    t0 = time.perf_counter()
    pfi, ci, undef = analyze(groups, a.draws, a.noise_rel, a.seed)
    t1 = time.perf_counter()

    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["file", "group", "pfi_ratio", "ci_lo", "ci_median", "ci_hi", "undefined_draws"])
    for i, (f, g, *_rest) in enumerate(groups):
        w.writerow([f, g, fmt(pfi[i]), fmt(ci[i, 0]), fmt(ci[i, 1]), fmt(ci[i, 2]),
                    "" if undef[i] < 0 else int(undef[i])])
    print(f"compute_s={t1 - t0:.6f}", file=sys.stderr)


if __name__ == "__main__":
    main()
