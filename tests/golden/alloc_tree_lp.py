#!/usr/bin/python3
"""Reference optimum of the allocation on a power tree with SciPy's linprog (HiGHS).

Input (written by tests/test_alloc_tree.c, test_tree_linprog and test_tree_weighted): blocks of
    case ID N M BUDGET BUDGET_KIND [WEIGHTED]
    M lines: PARENT LIMIT KIND            (a level; PARENT -1 at the top, LIMIT inf: none;
                                           KIND 0 reserve, 1 measured)
    N lines: NODE GPUS BAND [WEIGHT] C0 P0 T0 C1 P1 T1 ...   (a job: its level, -1 under the
                                           site only, its objective weight when WEIGHTED is 1,
                                           its curve points, caps ascending)
One variable per curve segment s (the fraction of it taken, 0 <= x_s <= 1); every job starts
at its first point. A level (and the site, of BUDGET_KIND) limits the sum over the segments
of the jobs under it of x_s times the segment's cap watts (GPUS x dC, reserve) or drawn watts
(dP, measured), less what the first points already take. The objective is the tokens/s of
the segments taken, each job's times its weight (1 without WEIGHTED). With bands the optimum
is lexicographic: the highest band's tokens/s is maximised first, then, with it held (to
1e-14 relative, without HiGHS's presolve where that finds it infeasible; up to 1e-9 where
HiGHS fails on less, by its own tolerances), the next band's, and so on. It is the exact optimum when the curves are concave in the space of the binding limits (the test
builds them concave in both). It shares no code with the C allocator (no envelope, no sort,
no greedy). Prints "ID V_1 V_2 ..." per case: the (weighted) tokens/s of each band, highest
first.
"""
import sys

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import csr_matrix, vstack


def solve(jobs, levels, budget, budget_kind):
    m = len(levels)
    rows, cols, vals = [], [], []
    base = np.zeros(m + 1)
    value, band_of = [], []
    k = 0
    for node, g, band, wt, pts in jobs:
        c, p, t = pts[0::3], pts[1::3], pts[2::3]
        chain = []
        a = node
        while a >= 0:
            chain.append(a)
            a = levels[a][0]
        for a in chain:
            base[a] += g * c[0] if levels[a][2] == 0 else p[0]
        base[m] += g * c[0] if budget_kind == 0 else p[0]
        for i in range(1, len(c)):
            for a in chain:
                rows.append(a)
                cols.append(k)
                vals.append(g * (c[i] - c[i - 1]) if levels[a][2] == 0 else p[i] - p[i - 1])
            rows.append(m)
            cols.append(k)
            vals.append(g * (c[i] - c[i - 1]) if budget_kind == 0 else p[i] - p[i - 1])
            value.append(wt * (t[i] - t[i - 1]))
            band_of.append(band)
            k += 1
    value = np.array(value)
    band_of = np.array(band_of)
    limit = np.array([lv[1] for lv in levels] + [budget])
    A = csr_matrix((vals, (rows, cols)), shape=(m + 1, k))
    keep = np.isfinite(limit)
    A = A[np.flatnonzero(keep)]
    b = (limit - base)[keep]
    bands = sorted(set(band for _, _, band, _, _ in jobs), reverse=True)
    out = []
    held_A, held = [], []  # the higher bands' objective rows and optima
    for bd in bands:
        mask = (band_of == bd).astype(float)
        c_obj = -(value * mask)
        # the higher bands held to what their solutions reach less a slack: 1e-14 relative
        # (HiGHS's presolve, then without it: its tolerances can find the held rows
        # infeasible), more (to 1e-9) only when both fail. Small: a slack of 1e-12 let the LP
        # trade a higher band's near-tie (segments whose slopes differ in the 12th digit, in
        # two subtrees) for 4e-7 more of a lower band.
        AA = vstack([A] + held_A) if held_A else A
        for slack in (1e-14, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9):
            extra = [-(v - slack * (1 + abs(v))) for v in held]
            bb = np.concatenate([b, np.array(extra)]) if held else b
            for presolve in (True, False):
                res = linprog(c_obj, A_ub=AA, b_ub=bb, bounds=(0, 1), method="highs",
                              options={"presolve": presolve})
                if res.status == 0:
                    break
            if res.status == 0:
                break
        if res.status != 0:
            sys.exit(f"linprog failed: {res.message}")
        got = -res.fun
        start = sum(wt * pts[2] for _, _, band, wt, pts in jobs if band == bd)
        out.append(start + got)
        held_A.append(csr_matrix(-(value * mask)).reshape(1, k))
        held.append(float((value * mask) @ res.x))
    return out


def main(path):
    lines = open(path).read().splitlines()
    i = 0
    while i < len(lines):
        head = lines[i].split()
        i += 1
        case, n, m = int(head[1]), int(head[2]), int(head[3])
        budget, budget_kind = float(head[4]), int(head[5])
        weighted = len(head) > 6 and int(head[6]) == 1
        levels = []
        for _ in range(m):
            f = lines[i].split()
            i += 1
            levels.append((int(f[0]), float(f[1]), int(f[2])))
        jobs = []
        for _ in range(n):
            f = lines[i].split()
            i += 1
            wt = float(f[3]) if weighted else 1.0
            pts = [float(x) for x in f[(4 if weighted else 3):]]
            jobs.append((int(f[0]), float(f[1]), float(f[2]), wt, pts))
        print(case, " ".join(repr(v) for v in solve(jobs, levels, budget, budget_kind)))


if __name__ == "__main__":
    main(sys.argv[1])
