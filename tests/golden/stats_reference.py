#!/usr/bin/python3
"""Independent SciPy/NumPy reference for pfi's statistics (include/pfi/stats.h).

Usage: /usr/bin/python3 tests/golden/stats_reference.py OUT_FILE

Writes one line per value, "KIND CASE FIELD VALUES", VALUES comma-separated repr() floats
(or the word "undefined" where the statistic does not exist, "nan" inside p-value lists for
a missing test). The inputs of every case are written too, so the C test (tests/test_stats.c)
reads everything from the file. This file shares no code with the C implementation.

Methods (what SciPy does, and what is done here by hand where SciPy has no function):
  spearman  scipy.stats.spearmanr (average ranks, t approximation with n-2 df)
  kruskal   scipy.stats.kruskal (tie-corrected H, chi-square p)
  dunn      by hand: scipy.stats.rankdata + tie-corrected SE, p = 2 * norm.sf(|z|), then Holm
            (scikit-posthocs' posthoc_dunn formula; scikit-posthocs is not in Debian)
  holm, bh  by hand from their definitions (statsmodels multipletests is not installed)
  ols       numpy.linalg.lstsq; SE, R^2, prediction interval with scipy.stats.t, leverage
            from the hat matrix X (X'X)^-1 X'
"""
import math
import sys

import numpy as np
from scipy import stats

OUT = []


def emit(kind, case, field, values):
    if isinstance(values, str):
        text = values
    else:
        text = ",".join("nan" if (isinstance(v, float) and math.isnan(v)) else repr(float(v))
                        for v in np.atleast_1d(values))
    OUT.append(f"{kind} {case} {field} {text}")


# ---- Spearman ----
SPEARMAN = {
    "no_ties": ([0.3, 1.2, 2.5, 0.7, 4.1, 3.3, 2.2, 5.0, 1.9, 0.1],
                [1.1, 1.5, 2.2, 1.0, 2.9, 2.4, 2.8, 3.3, 1.2, 1.3]),
    "ties": ([1, 2, 2, 3, 4, 4, 4, 5, 6, 7, 7, 8],
             [2.0, 1.0, 3.0, 3.0, 5.0, 4.0, 6.0, 6.0, 9.0, 7.0, 8.0, 8.0]),
    "n3": ([1.0, 2.0, 3.0], [2.0, 1.0, 3.5]),
    "n3_perfect": ([1.0, 2.0, 3.0], [10.0, 20.0, 30.0]),
    "negative": ([1.27, 1.43, 2.10, 1.10, 2.67, 1.35, 1.9, 1.6],
                 [0.9, 0.7, 0.3, 0.95, 0.2, 0.65, 0.35, 0.6]),
    "constant_x": ([5.0, 5.0, 5.0, 5.0], [1.0, 2.0, 3.0, 4.0]),
    "constant_y": ([1.0, 2.0, 3.0, 4.0, 5.0], [7.0, 7.0, 7.0, 7.0, 7.0]),
    "n2": ([1.0, 2.0], [3.0, 1.0]),
}
for name, (x, y) in SPEARMAN.items():
    emit("spearman", name, "x", x)
    emit("spearman", name, "y", y)
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if len(x) < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        emit("spearman", name, "rho", "undefined")
        emit("spearman", name, "p", "undefined")
        continue
    res = stats.spearmanr(x, y)
    emit("spearman", name, "rho", res.statistic)
    emit("spearman", name, "p", res.pvalue)

# ---- Kruskal-Wallis and Dunn ----
KRUSKAL = {
    # paper-like: dense / moe-pt / moe-ft PFIs, with ties
    "classes": [[1.10, 1.21, 1.27, 1.27, 1.31, 1.35, 1.44, 1.19, 1.27],
                [1.30, 1.43, 1.52, 1.38, 1.43, 1.61, 1.27],
                [1.85, 2.10, 2.67, 1.98, 2.31, 2.05, 2.20, 1.43]],
    "two_groups": [[1.0, 2.0, 3.0, 4.0], [2.5, 3.5, 5.0, 6.0, 7.0]],
    "heavy_ties": [[1, 1, 1, 2], [1, 2, 2, 2], [2, 3, 3, 3]],
    "singletons": [[1.0], [2.0], [3.0]],
    "all_tied": [[4.0, 4.0], [4.0, 4.0, 4.0], [4.0]],
}


def dunn(groups):
    x = np.concatenate([np.asarray(g, float) for g in groups])
    n = len(x)
    r = stats.rankdata(x)
    _, counts = np.unique(x, return_counts=True)
    ties = float(np.sum(counts ** 3 - counts))
    var = n * (n + 1) / 12.0 - ties / (12.0 * (n - 1))
    means, sizes, pos = [], [], 0
    for g in groups:
        means.append(r[pos:pos + len(g)].mean())
        sizes.append(len(g))
        pos += len(g)
    zs, ps = [], []
    for a in range(len(groups)):
        for b in range(a + 1, len(groups)):
            if var <= 1e-12 * n * n:
                zs.append(float("nan"))
                ps.append(float("nan"))
                continue
            se = math.sqrt(var * (1.0 / sizes[a] + 1.0 / sizes[b]))
            z = (means[a] - means[b]) / se
            zs.append(z)
            ps.append(min(1.0, 2.0 * stats.norm.sf(abs(z))))
    return zs, ps, means


def holm(p):
    p = np.asarray(p, float)
    out = np.full(len(p), np.nan)
    idx = [i for i in range(len(p)) if not math.isnan(p[i])]
    m = len(idx)
    idx.sort(key=lambda i: p[i])
    running = 0.0
    for rank, i in enumerate(idx):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def bh(p):
    p = np.asarray(p, float)
    out = np.full(len(p), np.nan)
    idx = [i for i in range(len(p)) if not math.isnan(p[i])]
    m = len(idx)
    idx.sort(key=lambda i: p[i])
    running = 1.0
    for rank in range(m - 1, -1, -1):
        i = idx[rank]
        running = min(running, m * p[i] / (rank + 1))
        out[i] = running
    return out


for name, groups in KRUSKAL.items():
    for gi, g in enumerate(groups):
        emit("kruskal", name, f"group{gi}", g)
    x = np.concatenate([np.asarray(g, float) for g in groups])
    if np.all(x == x[0]):
        emit("kruskal", name, "h", "undefined")
        emit("kruskal", name, "p", "undefined")
    else:
        res = stats.kruskal(*groups)
        emit("kruskal", name, "h", res.statistic)
        emit("kruskal", name, "p", res.pvalue)
    zs, ps, means = dunn(groups)
    emit("kruskal", name, "mean_rank", means)
    emit("kruskal", name, "dunn_z", zs)
    emit("kruskal", name, "dunn_p", ps)
    emit("kruskal", name, "dunn_holm", holm(ps))

# ---- multiple comparisons ----
PVALUES = {
    "mixed": [0.01, 0.04, 0.03, 0.20, 0.001, 0.04, 0.5, 0.9],
    "with_nan": [0.02, float("nan"), 0.2, 0.003, float("nan"), 0.04],
    "single": [0.3],
    "ones": [1.0, 1.0, 0.9],
}
for name, p in PVALUES.items():
    emit("adjust", name, "p", p)
    emit("adjust", name, "holm", holm(p))
    emit("adjust", name, "bh", bh(p))

# ---- OLS ----
OLS = {
    "one_feature": ([[0.02], [0.05], [0.11], [0.08], [0.21], [0.30], [0.15], [0.26], [0.04], [0.12]],
                    [1.12, 1.25, 1.41, 1.36, 1.83, 2.41, 1.52, 2.05, 1.30, 1.38],
                    [[0.10], [0.40]]),
    "two_features": ([[0.2, 0.9], [0.3, 0.7], [0.5, 0.8], [0.4, 0.3], [0.8, 0.4], [0.9, 0.1],
                      [0.6, 0.6], [0.7, 0.2]],
                     [1.2, 1.3, 1.6, 1.8, 2.2, 2.6, 1.7, 2.3],
                     [[0.5, 0.5], [1.0, 0.0]]),
    "n3": ([[1.0], [2.0], [4.0]], [1.5, 2.1, 3.9], [[3.0]]),
    "exact_two": ([[1.0], [3.0]], [2.0, 4.0], [[2.0]]),
    "constant_feature": ([[0.5], [0.5], [0.5], [0.5]], [1.0, 2.0, 3.0, 4.0], [[0.5]]),
}
for name, (x, y, x0s) in OLS.items():
    X = np.asarray(x, float)
    yv = np.asarray(y, float)
    n, p = X.shape
    emit("ols", name, "p", [p])
    emit("ols", name, "x", X.ravel())
    emit("ols", name, "y", yv)
    emit("ols", name, "x0", np.asarray(x0s, float).ravel())
    if np.any(np.ptp(X, axis=0) == 0) or n < p + 1:
        emit("ols", name, "coef", "undefined")
        continue
    A = np.column_stack([np.ones(n), X])
    coef, *_ = np.linalg.lstsq(A, yv, rcond=None)
    resid = yv - A @ coef
    rss = float(resid @ resid)
    tss = float(((yv - yv.mean()) ** 2).sum())
    df = n - p - 1
    xtx_inv = np.linalg.inv(A.T @ A)
    emit("ols", name, "coef", coef)
    emit("ols", name, "r2", [1 - rss / tss])
    H = A @ xtx_inv @ A.T
    emit("ols", name, "leverage", np.diag(H))
    yhat, lo, hi = [], [], []
    for x0 in x0s:
        a = np.concatenate([[1.0], x0])
        f = float(a @ coef)
        yhat.append(f)
        if df > 0:
            s = math.sqrt(rss / df)
            half = stats.t.ppf(0.975, df) * s * math.sqrt(1 + a @ xtx_inv @ a)
            lo.append(f - half)
            hi.append(f + half)
    emit("ols", name, "yhat", yhat)
    if df > 0:
        s = math.sqrt(rss / df)
        emit("ols", name, "se", s * np.sqrt(np.diag(xtx_inv)))
        emit("ols", name, "sigma", [s])
        emit("ols", name, "r2_adj", [1 - (1 - (1 - rss / tss)) * (n - 1) / df])
        emit("ols", name, "pi_lo", lo)
        emit("ols", name, "pi_hi", hi)
    else:
        emit("ols", name, "se", "undefined")

with open(sys.argv[1], "w") as fh:
    fh.write("# generated by tests/golden/stats_reference.py with SciPy "
             f"{__import__('scipy').__version__}, NumPy {np.__version__}; do not edit\n")
    fh.write("\n".join(OUT) + "\n")
print(f"stats_reference: {len(OUT)} lines", file=sys.stderr)
