#!/usr/bin/python3
"""References for bench/allocate: the same allocation instance solved by SciPy's linprog
(HiGHS) or by a vectorised NumPy greedy over curve segments.

    alloc_reference.py FILE linprog|greedy [REPEAT]

FILE is written by bench/alloc_bench (native doubles: n, k, budget, caps[k], power[n*k],
tput[n*k]; each job's k points in power space, power rising, slopes falling). Both solve

    maximise  sum_j T_j0 + sum_s slope_s x_s   s.t.  sum_j P_j0 + sum_s x_s <= budget,
              0 <= x_s <= width_s               (one variable per curve segment s)

which is the exact optimum for concave curves.
  - linprog: scipy.optimize.linprog(method="highs") on that LP (one dense row, n*(k-1)
    bounded variables); timed from the arrays to the solution, the LP's construction
    included.
  - greedy: slopes and widths of all segments, one argsort by slope (descending; NumPy's
    default sort), a cumsum of widths, everything before the budget runs out taken and the
    crossing segment in part.
Prints "method=... n=... median_s=... min_s=... cpu_median_s=... objective=%.17g" (median
and minimum wall-clock time over REPEAT runs, default 5 for greedy, 1 for linprog, and the
median CPU time of the process over the same runs: what the run cost on a shared machine,
waiting for a core left out, as alloc_bench's cpu_median_s). Reading the file is not timed.
"""
import sys
import time

import numpy as np


def load(path):
    raw = np.fromfile(path, dtype=np.float64)
    n, k, budget = int(raw[0]), int(raw[1]), raw[2]
    off = 3 + k
    power = raw[off:off + n * k].reshape(n, k)
    tput = raw[off + n * k:off + 2 * n * k].reshape(n, k)
    return n, k, budget, power, tput


def segments(power, tput):
    width = np.diff(power, axis=1).ravel()
    slope = np.diff(tput, axis=1).ravel() / width
    return slope, width


def greedy(budget, power, tput):
    base_p = power[:, 0].sum()
    base_t = tput[:, 0].sum()
    slope, width = segments(power, tput)
    # NumPy's default sort (introsort): the greedy needs no stable order (segments of equal
    # slope are worth the same), and "stable" (timsort) cost NumPy 12 % more at 10 000 jobs
    # (4.1 against 3.6 ms for the argsort), 5 % at 100 000 (issue 18 item 8)
    order = np.argsort(-slope)
    w = width[order]
    s = slope[order]
    cum = np.cumsum(w)
    cap = budget - base_p
    full = np.searchsorted(cum, cap, side="right")  # segments that fit entirely
    value = base_t + np.dot(s[:full], w[:full])
    if full < len(w):
        used = cum[full - 1] if full > 0 else 0.0
        value += s[full] * (cap - used)
    return value


def linprog(budget, power, tput):
    from scipy.optimize import linprog as lp
    base_p = power[:, 0].sum()
    base_t = tput[:, 0].sum()
    slope, width = segments(power, tput)
    m = len(slope)
    res = lp(-slope, A_ub=np.ones((1, m)), b_ub=[budget - base_p],
             bounds=np.column_stack([np.zeros(m), width]), method="highs")
    if res.status != 0:
        raise SystemExit("linprog failed: " + res.message)
    return base_t - res.fun


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("linprog", "greedy"):
        raise SystemExit(__doc__)
    method = sys.argv[2]
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else (5 if method == "greedy" else 1)
    n, k, budget, power, tput = load(sys.argv[1])
    fn = greedy if method == "greedy" else linprog
    times, cpu = [], []
    value = None
    for _ in range(repeat):
        c0 = time.process_time()
        t0 = time.perf_counter()
        value = fn(budget, power, tput)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    times.sort()
    cpu.sort()
    print("method=%s n=%d median_s=%.6f min_s=%.6f cpu_median_s=%.6f objective=%.17g"
          % (method, n, times[len(times) // 2], times[0], cpu[len(cpu) // 2], value))


if __name__ == "__main__":
    main()
