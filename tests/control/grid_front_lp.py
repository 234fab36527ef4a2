#!/usr/bin/python3
"""scripts/grid-event-front.py's row problem against brute force: on random small instances
(3-4 jobs, 6-12 caps, non-concave curves with flat stretches, random weights and budgets),
row_lp's bound is at least the exact whole-cap optimum (enumerated) and its allocation within
the budget, worth what it reports and at most that optimum; upper_hull's vertices are points of
the curve, start at its lowest cap (or the last of equal power) and leave no point above them.
usage: grid_front_lp.py SOURCE_DIR"""
import importlib.util
import itertools
import random
import sys

spec = importlib.util.spec_from_file_location("front", f"{sys.argv[1]}/scripts/grid-event-front.py")
front = importlib.util.module_from_spec(spec)
spec.loader.exec_module(front)

rng = random.Random(20)
fails = 0
for case in range(300):
    nj, nc = rng.randint(3, 4), rng.randint(6, 12)
    names = [f"j{i}" for i in range(nj)]
    P, y, hull, k = {}, {}, {}, {}
    for j in names:
        # non-decreasing power (flat stretches: below the static draw) and throughput
        p, t = [], []
        pw, tp = rng.uniform(50, 100), rng.uniform(0, 0.2)
        for c in range(nc):
            pw += 0 if rng.random() < 0.2 else rng.choice([16, 32, 48, rng.uniform(1, 60)])
            tp += 0 if rng.random() < 0.1 else rng.uniform(0, 0.3)
            p.append(pw)
            t.append(tp)
        P[j], y[j], k[j] = p, t, rng.uniform(0.1, 2)
        hull[j] = front.upper_hull(p, t)
        h = hull[j]
        first = max(i for i in range(nc) if p[i] == p[0])
        ok = h[0] == first and all(a < b for a, b in zip(h, h[1:]))
        for a, b in zip(h, h[1:]):  # no point above a hull segment
            for i in range(nc):
                if p[a] <= p[i] <= p[b] and p[b] > p[a]:
                    line = t[a] + (t[b] - t[a]) * (p[i] - p[a]) / (p[b] - p[a])
                    ok &= t[i] <= line + 1e-12
        ok &= all(t[i] <= t[h[-1]] + 1e-12 for i in range(nc))
        if not ok:
            print(f"case {case} {j}: hull {h} of P {p} y {t}")
            fails += 1
    lo = sum(P[j][0] for j in names)
    hi = sum(P[j][-1] for j in names)
    budget = rng.uniform(lo - 10, hi + 10)
    best = None
    for caps in itertools.product(range(nc), repeat=nj):
        if sum(P[j][c] for j, c in zip(names, caps)) <= budget + 1e-9:
            v = sum(k[j] * y[j][c] for j, c in zip(names, caps))
            best = v if best is None or v > best else best
    r = front.row_lp(names, k, P, y, hull, budget)
    if best is None:
        if r is not None:
            print(f"case {case}: infeasible budget {budget}, row_lp gave {r}")
            fails += 1
        continue
    if r is None:
        print(f"case {case}: row_lp found nothing under {budget}, the optimum is {best}")
        fails += 1
        continue
    bound, value, pick = r
    used = sum(P[j][pick[j]] for j in names)
    worth = sum(k[j] * y[j][pick[j]] for j in names)
    if not (bound >= best - 1e-9 and value <= best + 1e-9 and used <= budget + 1e-9 and
            abs(worth - value) <= 1e-9):
        print(f"case {case}: bound {bound} optimum {best} value {value} (worth {worth}), "
              f"power {used} of {budget}")
        fails += 1
print(f"  300 random instances: {'ok' if fails == 0 else f'{fails} failures'}")
sys.exit(1 if fails else 0)
