#!/usr/bin/python3
"""Reference optimum of the power-allocation LP with SciPy's linprog (HiGHS).

Input (written by tests/test_allocate.c): blocks of
    case ID N BUDGET
    then N lines: P0 T0 P1 T1 ... (one job's curve points in power space, power ascending)
For each case, one variable per curve segment s of job j, 0 <= x_s <= P_{s+1} - P_s, and
    maximise  sum_j T_{j,0} + sum_s slope_s x_s   s.t.  sum_j P_{j,0} + sum_s x_s <= BUDGET.
This is the exact optimum when every curve is concave (the segments' slopes fall), which is
how the test builds them. It shares no code with the C allocator (no envelope, no selection).
Prints "ID OBJECTIVE" per case.
"""
import sys

import numpy as np
from scipy.optimize import linprog


def main(path):
    lines = open(path).read().splitlines()
    i = 0
    while i < len(lines):
        head = lines[i].split()
        i += 1
        case, n, budget = int(head[1]), int(head[2]), float(head[3])
        slopes, widths, base_p, base_t = [], [], 0.0, 0.0
        for _ in range(n):
            v = [float(x) for x in lines[i].split()]
            i += 1
            p, t = np.array(v[0::2]), np.array(v[1::2])
            base_p += p[0]
            base_t += t[0]
            dp, dt = np.diff(p), np.diff(t)
            slopes.extend(dt / dp)
            widths.extend(dp)
        res = linprog(-np.array(slopes), A_ub=np.ones((1, len(slopes))),
                      b_ub=[budget - base_p], bounds=list(zip([0.0] * len(widths), widths)),
                      method="highs")
        if res.status != 0:
            sys.exit(f"case {case}: linprog failed: {res.message}")
        print(case, repr(base_t - res.fun))


if __name__ == "__main__":
    main(sys.argv[1])
