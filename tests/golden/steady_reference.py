#!/usr/bin/python3
"""Independent reference for pfi_steady_state (include/pfi/steady.h); shares no code with C.

For each case (a fixed series: literal arrays, or a 64-bit LCG for the long one) it computes
the steady-state value as the header defines it:

  * warm-up: samples with t[i] - t[0] < warmup_s are dropped (counted in n_warmup);
  * missing: of the rest, samples with valid[i] false or a NaN value (counted in n_missing);
  * m = max(1, ceil(q * n_valid)), q read as the decimal it is written as (0.1 * 30 = 3,
    not the 4 that binary 0.1 * 30 would round up to);
  * mean of the m largest valid samples, se = sample standard deviation (ddof=1) / sqrt(m),
    NaN when m < 2; no valid sample -> status "empty", mean = se = NaN.

Mean and se are computed with NumPy and, exactly, with fractions; the two must agree (1e-13)
and the exact value, rounded once, is written. Output: steady_expected.csv, one row per case:

  case,q,warmup_s,times,values,valid,status,mean,se,m,n_valid,n_missing,n_warmup

times/values: space-separated repr() floats ("nan" for NaN), times "-" for none (t_s = NULL);
valid: one '1'/'0' per sample, "-" for none (valid = NULL). q, warmup_s, mean, se: repr().

Regenerate from the repo root:
    /usr/bin/python3 tests/golden/steady_reference.py tests/golden/steady_expected.csv
"""
import math
import sys
from decimal import Decimal
from fractions import Fraction

import numpy as np

NAN = float("nan")


class Lcg:
    """Knuth's MMIX LCG; u() = top 53 bits / 2^53, in [0, 1)."""

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        return self.state

    def u(self):
        return (self.next() >> 11) / float(1 << 53)


def reference(times, values, valid, warmup, q):
    n = len(values)
    n_warmup = n_missing = 0
    kept = []
    for i in range(n):
        if times is not None and times[i] - times[0] < warmup:
            n_warmup += 1
            continue
        if (valid is not None and not valid[i]) or math.isnan(values[i]):
            n_missing += 1
            continue
        kept.append(values[i])
    k = len(kept)
    if k == 0:
        return dict(status="empty", mean=NAN, se=NAN, m=0, n_valid=0, n_missing=n_missing,
                    n_warmup=n_warmup)
    m = max(1, math.ceil(Decimal(repr(q)) * k))
    m = min(m, k)
    top = np.sort(np.array(kept, dtype=np.float64))[::-1][:m]
    np_mean = float(np.mean(top))
    np_se = float(np.std(top, ddof=1) / np.sqrt(m)) if m >= 2 else NAN
    # exact
    fr = [Fraction(x) for x in top]
    fmean = sum(fr) / m
    mean = float(fmean)
    if m >= 2:
        var = sum((x - fmean) ** 2 for x in fr) / (m - 1)
        se = math.sqrt(float(var / m))
    else:
        se = NAN
    assert abs(np_mean - mean) <= 1e-13 * abs(mean) + 1e-300, (np_mean, mean)
    if m >= 2:
        assert abs(np_se - se) <= 1e-13 * max(abs(se), abs(mean)), (np_se, se)
    return dict(status="ok", mean=mean, se=se, m=m, n_valid=k, n_missing=n_missing,
                n_warmup=n_warmup)


def cases():
    out = []

    def add(name, values, q, times=None, valid=None, warmup=0.0):
        out.append((name, times, values, valid, float(warmup), q))

    shuffled10 = [3.0, 7.0, 1.0, 10.0, 4.0, 9.0, 2.0, 8.0, 6.0, 5.0]
    for q in (0.1, 0.25, 1.0):
        add("n10_q%s" % q, shuffled10, q)
    for q in (0.1, 0.25, 1.0):
        add("n1_q%s" % q, [42.5], q)
    for q in (0.1, 0.25, 0.5, 1.0):
        add("n2_q%s" % q, [1.5, 2.5], q)
    n11 = [212.25, 198.5, 250.75, 249.0, 180.125, 250.75, 201.0, 199.99, 245.5, 230.0, 175.0]
    for q in (0.1, 0.25, 1.0):
        add("n11_q%s" % q, n11, q)
    ties = [5.0, 7.0, 5.0, 5.0, 3.0, 7.0, 5.0, 1.0, 1.0, 5.0]
    for q in (0.1, 0.25, 0.5, 0.7, 1.0):
        add("ties_q%s" % q, ties, q)
    add("all_equal", [0.1] * 10, 0.5)
    add("all_equal_q1", [250.0] * 7, 1.0)
    add("negative", [-3.5, -1.25, -7.0, -1.25, -2.0], 0.5)
    add("large", [1e6 + 0.125 * i for i in (3, 1, 4, 1, 5, 9, 2, 6)], 0.5)
    # missing: NaN values and invalid flags (m counts valid samples only)
    add("nan_values", [NAN, 4.0, 2.0, NAN, 8.0, 6.0, NAN, 1.0], 0.5)
    add("invalid_flags", [100.0, 900.0, 300.0, 200.0, 800.0, 400.0], 0.25,
        valid=[True, False, True, True, False, True])
    add("nan_and_flags", [1.0, NAN, 3.0, 4.0, 5.0, NAN, 7.0, 8.0, 9.0, 10.0, 11.0], 0.25,
        valid=[True, True, False, True, True, True, True, False, True, True, True])
    add("all_valid_flags", shuffled10, 0.25, valid=[True] * 10)
    # warm-up boundaries: t - t0 < warmup is warm-up, t - t0 == warmup is kept
    t20 = [5.0 * i for i in range(20)]
    v20 = [100.0 + ((7 * i) % 20) for i in range(20)]
    add("warmup_0_times", v20, 0.1, times=t20, warmup=0.0)
    add("warmup_10_exact", v20, 0.1, times=t20, warmup=10.0)
    add("warmup_just_over_10", v20, 0.1, times=t20, warmup=10.000001)
    add("warmup_just_under_10", v20, 0.1, times=t20, warmup=9.999999)
    add("warmup_t0_offset", v20, 0.25, times=[1000.5 + t for t in t20], warmup=30.0)
    add("warmup_drops_top", [999.0, 998.0] + v20[2:], 0.1, times=t20, warmup=7.5)
    add("warmup_nan_counted_as_warmup", [NAN, NAN] + v20[2:], 0.25, times=t20, warmup=10.0,
        valid=[True, False] + [True] * 18)
    add("equal_times", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 0.5, times=[0.0, 0.0, 5.0, 5.0, 5.0, 10.0],
        warmup=5.0)
    add("warmup_everything", [1.0, 2.0, 3.0], 0.1, times=[0.0, 1.0, 2.0], warmup=100.0)
    add("warmup_zero_span", [1.0, 2.0, 3.0], 0.5, times=[7.0, 7.0, 7.0], warmup=0.0)
    # empty: no valid sample after the warm-up
    add("all_nan", [NAN, NAN, NAN], 0.1)
    add("all_invalid", [1.0, 2.0], 0.1, valid=[False, False])
    add("empty_after_warmup", [1.0, NAN, NAN], 0.5, times=[0.0, 10.0, 20.0], warmup=5.0)
    # q * n at integer boundaries (binary rounding must not add a sample)
    add("q0.1_n30", [float(i) for i in range(30)], 0.1)
    add("q0.3_n10", [float(i) for i in range(10)], 0.3)
    add("q0.7_n10", [float(i) for i in range(10)], 0.7)
    add("q0.07_n100", [float((37 * i) % 100) for i in range(100)], 0.07)
    add("q0.15_n20", [float(i) for i in range(20)], 0.15)
    add("q0.35_n20", [float(i) for i in range(20)], 0.35)
    add("q1e-9_n50", [float(i) for i in range(50)], 1e-9)
    # 1000 samples from a fixed LCG: DCGM-like power at 5 s, 0.5 W resolution (many ties),
    # NaN gaps and invalid flags, a 60 s warm-up
    g = Lcg(20240229)
    t, v, ok = [], [], []
    for i in range(1000):
        t.append(17.25 + 5.0 * i)
        u = g.u()
        x = math.floor((150.0 + 150.0 * u) * 2.0) / 2.0
        if g.u() < 0.03:
            x = NAN
        v.append(x)
        ok.append(g.u() >= 0.02)
    for q in (0.1, 0.25, 1.0):
        add("lcg1000_q%s" % q, v, q, times=t, valid=ok, warmup=60.0)
    # the same values, no warm-up, no flags
    for q in (0.1, 1.0):
        add("lcg1000_plain_q%s" % q, v, q)
    return out


def fmt(x):
    return "nan" if math.isnan(x) else repr(x)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/steady_expected.csv"
    rows = ["case,q,warmup_s,times,values,valid,status,mean,se,m,n_valid,n_missing,n_warmup"]
    for name, times, values, valid, warmup, q in cases():
        r = reference(times, values, valid, warmup, q)
        rows.append(",".join([
            name, repr(q), repr(warmup),
            "-" if times is None else " ".join(fmt(x) for x in times),
            " ".join(fmt(x) for x in values),
            "-" if valid is None else "".join("1" if b else "0" for b in valid),
            r["status"], fmt(r["mean"]), fmt(r["se"]), str(r["m"]), str(r["n_valid"]),
            str(r["n_missing"]), str(r["n_warmup"]),
        ]))
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
