#!/usr/bin/python3
"""Power-swing figures of a measured power series, computed with NumPy (independently of
pfi's GSL code) for tests/control/ramp.sh and test_ctl_tree: reads "t_s w" lines on
stdin (a NaN power skipped), prints JSON {max_ramp_w_per_s, dynamic_range_w, period_s,
osc_energy_w2} with the definition of pfi/audit.h: the series resampled linearly at its
median step, mean removed, the full complex FFT, sum |X_k|^2 / N^2 over the bins with
lo <= |f_k| <= hi (0.1 and 20 Hz unless given as arguments); null when lo is above the
Nyquist frequency."""
import json
import sys

import numpy as np

lo = float(sys.argv[1]) if len(sys.argv) > 1 else 0.1
hi = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
t = np.array([r[0] for r in rows if np.isfinite(r[1])])
w = np.array([r[1] for r in rows if np.isfinite(r[1])])
out = {"max_ramp_w_per_s": float(np.max(np.abs(np.diff(w)) / np.diff(t))),
       "dynamic_range_w": float(w.max() - w.min())}
dt = float(np.median(np.diff(t)))
out["period_s"] = dt
g = int(np.floor((t[-1] - t[0]) / dt + 1e-9)) + 1
if 0.5 / dt >= lo and g >= 4 and len(t) >= 4:
    grid = t[0] + dt * np.arange(g)
    y = np.interp(grid, t, w)
    y = y - y.mean()
    X = np.fft.fft(y)
    f = np.fft.fftfreq(g, dt)
    sel = (np.abs(f) >= lo) & (np.abs(f) <= hi)
    out["osc_energy_w2"] = float(np.sum(np.abs(X[sel]) ** 2) / g ** 2)
else:
    out["osc_energy_w2"] = None
print(json.dumps(out))
