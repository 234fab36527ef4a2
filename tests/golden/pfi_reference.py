#!/usr/bin/python3
"""Independent Python/NumPy/SciPy reference for pfi's PFI computation (DESIGN.md sections 2-3).

Usage: /usr/bin/python3 tests/golden/pfi_reference.py DATA_ROOT OUT_CSV [--points POINTS_CSV]
           [--ci CI_CSV [--noise-rel R] [--draws N] [--seed S]]

DATA_ROOT must contain the folders zeus_nsdi23_power/ and zeus_jit_profile/.
Writes one row per sweep group to OUT_CSV; prints a one-line summary to stderr.
With --points, also writes one row per non-reference point (x, y, p, t, status) for debugging.
With --ci, also writes the Monte Carlo CI of the ratio PFI of every group with a defined ratio:
the whole estimator resampled (every point's P and T and the reference's drawn from normals
with standard error R x value, the exclusion rules applied again in each draw), the CI over
the defined draws (quantiles type 7 = numpy's 'linear'), the undefined draws counted, and each
quantile's Monte Carlo standard error (Siddiqui-Bloch-Gastwirth density estimate) so that a
different generator can be compared statistically.

This file deliberately shares no code with the C implementation.
"""
import csv
import fnmatch
import glob
import math
import os
import sys

import numpy as np
from scipy.integrate import trapezoid

X_MIN = 0.02  # a cap "binds" only if it cuts power by at least 2 % of the reference

HEADER = ["file", "group", "cap_ref_w", "power_ref_w", "throughput_ref",
          "pfi_ratio", "pfi_area", "pfi_ce", "points_used", "points_ratio", "excluded"]
POINT_HEADER = ["file", "group", "cap_w", "power_w", "throughput", "x", "y", "p", "t", "status"]
NSDI_KEYS = ["dataset", "network", "batch_size", "optimizer"]


def read_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def load_nsdi(path):
    """Yield (group_label, [(cap, P, T), ...]) in order of first appearance in the file."""
    groups = {}  # dict keeps insertion order = first appearance
    for r in read_rows(path):
        key = "|".join(r[k] for k in NSDI_KEYS)
        cap = int(r["power_limit"])
        power = float(r["average_power"])
        throughput = 1.0 / float(r["time_per_epoch"])
        groups.setdefault(key, []).append((cap, power, throughput))
    return list(groups.items())


def load_jit(path):
    """A zeus_jit_profile file is exactly one sweep group (label '')."""
    rows = read_rows(path)
    runs = []
    for r in rows:
        cap = int(r["window_name"].rsplit("_", 1)[1])
        elapsed = float(r["elapsed_time"])
        energy = sum(float(v) for k, v in r.items() if fnmatch.fnmatchcase(k, "gpu*_energy"))
        runs.append((cap, energy / elapsed, 1.0 / elapsed))
    return [("", runs)]


def merge_same_cap(runs):
    """Runs sharing a cap become one point: mean P, mean T. Returns {cap: (P, T)}."""
    acc = {}
    for cap, power, thr in runs:
        acc.setdefault(cap, []).append((power, thr))
    return {cap: (float(np.mean([v[0] for v in vals])), float(np.mean([v[1] for v in vals])))
            for cap, vals in acc.items()}


def pfi_group(runs):
    pts = merge_same_cap(runs)
    cap_ref = max(pts)
    p0, t0 = pts[cap_ref]
    used, ratios, excluded, details = [], [], 0, []
    for cap in sorted(pts, reverse=True):
        if cap == cap_ref:
            continue
        pk, tk = pts[cap]
        x = (p0 - pk) / p0
        y = (t0 - tk) / t0
        if x < X_MIN:
            excluded += 1
            status = "power_above_reference" if x < 0 else "cap_not_binding"
        else:
            used.append((pk / p0, tk / t0))
            if y <= 0:
                status = "no_throughput_loss"
            else:
                ratios.append(x / y)
                status = "ratio"
        details.append((cap, pk, tk, x, y, pk / p0, tk / t0, status))

    pfi_ratio = float(np.mean(ratios)) if ratios else None

    pfi_area = pfi_ce = None
    if used:
        p = np.array([1.0] + [u[0] for u in used])
        t = np.array([1.0] + [u[1] for u in used])
        order = np.argsort(p, kind="stable")
        p, t = p[order], t[order]
        p_min = p[0]
        # integral of (t(p) - p) over [p_min, 1], t piecewise linear through the points
        num = trapezoid(t, p) - trapezoid(p, p)
        den = (1.0 - p_min) ** 2 / 2.0
        pfi_area = float(num / den)

        lp = np.log(np.array([u[0] for u in used]))
        lt = np.log(np.array([u[1] for u in used]))
        beta = np.sum(lp * lt) / np.sum(lp * lp)
        pfi_ce = float(1.0 - beta)

    return dict(cap_ref=cap_ref, p0=p0, t0=t0, ratio=pfi_ratio, area=pfi_area, ce=pfi_ce,
                used=len(used), n_ratio=len(ratios), excluded=excluded, details=details)


CI_HEADER = ["file", "group", "draws", "undefined", "ci_lo", "ci_median", "ci_hi",
             "se_lo", "se_median", "se_hi"]


def ci_group(runs, noise_rel, draws, rng, level=0.95):
    """The CI of the ratio PFI by resampling the whole estimator (see the module doc)."""
    pts = merge_same_cap(runs)
    cap_ref = max(pts)
    p0, t0 = pts[cap_ref]
    others = [pts[c] for c in sorted(pts, reverse=True) if c != cap_ref]
    # draw order: the reference's P then T, then each point's P then T (any order would do)
    P0 = p0 + noise_rel * p0 * rng.standard_normal(draws)
    T0 = t0 + noise_rel * t0 * rng.standard_normal(draws)
    total = np.zeros(draws)
    used = np.zeros(draws)
    for pk, tk in others:
        P = pk + noise_rel * pk * rng.standard_normal(draws)
        T = tk + noise_rel * tk * rng.standard_normal(draws)
        x = (P0 - P) / P0
        y = (T0 - T) / T0
        ok = (x >= X_MIN) & (y > 0)
        total += np.where(ok, x / np.where(ok, y, 1.0), 0.0)
        used += ok
    defined = (used > 0) & (P0 > 0) & (T0 > 0)
    vals = total[defined] / used[defined]
    n = len(vals)
    a = (1.0 - level) / 2.0
    probs = [a, 0.5, 1.0 - a]
    if n == 0:
        return draws, draws, [None] * 3, [None] * 3
    q = [float(np.quantile(vals, pr)) for pr in probs]
    se = []
    h = 0.01
    for pr in probs:
        lo, hi = np.quantile(vals, [max(pr - h, 0.0), min(pr + h, 1.0)])
        width = min(pr + h, 1.0) - max(pr - h, 0.0)
        dens = width / (hi - lo) if hi > lo else math.inf
        se.append(float(math.sqrt(pr * (1 - pr) / n) / dens))
    return draws, draws - n, q, se


def fmt(v):
    return "" if v is None else repr(v)


def main(argv):
    args = argv[1:]
    points_path = None
    if "--points" in args:
        i = args.index("--points")
        points_path = args[i + 1]
        del args[i:i + 2]
    ci_path, noise_rel, draws, seed = None, 0.02, 20000, 1
    for opt in ("--ci", "--noise-rel", "--draws", "--seed"):
        if opt in args:
            i = args.index(opt)
            val = args[i + 1]
            del args[i:i + 2]
            if opt == "--ci":
                ci_path = val
            elif opt == "--noise-rel":
                noise_rel = float(val)
            elif opt == "--draws":
                draws = int(val)
            else:
                seed = int(val)
    if len(args) != 2:
        sys.exit(__doc__)
    root, out_path = args

    files = [(p, load_nsdi) for p in glob.glob(os.path.join(root, "zeus_nsdi23_power", "summary_power_*.csv"))]
    files += [(p, load_jit) for p in glob.glob(os.path.join(root, "zeus_jit_profile", "*.csv"))]
    files.sort(key=lambda f: f[0])  # code-point (byte) order of the full path
    if not files:
        sys.exit("no input files under %s" % root)

    rows, point_rows, per_file, ci_rows = [], [], {}, []
    for path, loader in files:
        base = os.path.basename(path)
        for label, runs in loader(path):
            r = pfi_group(runs)
            if ci_path and r["ratio"] is not None:
                rng = np.random.default_rng([seed, len(ci_rows)])
                d, und, q, se = ci_group(runs, noise_rel, draws, rng)
                ci_rows.append([base, label, d, und] + [fmt(v) for v in q] + [fmt(v) for v in se])
            rows.append([base, label, str(r["cap_ref"]), fmt(r["p0"]), fmt(r["t0"]),
                         fmt(r["ratio"]), fmt(r["area"]), fmt(r["ce"]),
                         r["used"], r["n_ratio"], r["excluded"]])
            per_file.setdefault(base, []).append(r["ratio"])
            for d in r["details"]:
                point_rows.append([base, label, d[0]] + [repr(v) for v in d[1:7]] + [d[7]])

    with open(out_path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(HEADER)
        w.writerows(rows)
    if ci_path:
        with open(ci_path, "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(CI_HEADER)
            w.writerows(ci_rows)
    if points_path:
        with open(points_path, "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(POINT_HEADER)
            w.writerows(point_rows)

    n_def = sum(1 for row in rows if row[5] != "")
    meds = []
    for base, vals in per_file.items():
        d = [v for v in vals if v is not None]
        meds.append("%s=%s" % (base, "%.3f" % float(np.median(d)) if d else "undef"))
    print("pfi_reference: %d groups, %d with defined ratio; median ratio per file: %s"
          % (len(rows), n_def, " ".join(meds)), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
