#!/usr/bin/python3
"""The exact (weighted, mean) Pareto front of a `pfi demo grid-event` replay, and where each
strategy lies on it (issue 20's ranking; docs/commands/pfi-demo.md).

The true curves: each job's emulated GPUs (scripts/grid-event-jobs.csv, the demo's spec and
seed k + 1, no reading noise) swept with `pfi sweep` at every whole watt 100-400 W: what the
agents deliver at a cap, up to their reading noise (checked: the 400 W throughput equals the
demo's reference.csv). The event as the settlement counts it: the audit log's event rows,
each row's time under its own caps (the controller reads before it caps: what a row's caps
delivered is what the next row read, and the settlement pairs them so). The decisions: each job's cap (whole watts, one cap for all its GPUs, as the controller sets them)
in every event row, under that row's budget less the controller's margin (budget_w x (1 -
margin)); the tiers (Flex 1/2/3: 10/25/50 %) on the job's life-average performance over every
row of the log, the rows outside the event uncapped.

For each theta the objective theta x weighted + (1 - theta) x mean, where weighted = sum g_j
perf_j / sum g and mean = sum perf_j / n (the settlement's scores, perf_j = the job's event
tokens/s over its reference at 400 W): the tier constraints are relaxed with a multiplier per
job (coordinate bisection), each row's problem relaxed to the jobs' upper concave envelopes
with the power continuous (a Lagrangian threshold over the envelopes' segments), which bounds
every whole-watt allocation from above. The dual value U(theta) so bounds every allocation's
score (weak duality); the primal point (whole-watt caps: every job at an envelope vertex, the
one the budget splits at the highest cap that fits, the two bracketing solutions mixed row by
row, each row within its budget and every tier kept) is an allocation that reaches it up to the
gap printed.

A strategy's point (W, M) on the true curves can be beaten in both scores by at most
delta = min over theta of U(theta) - theta W - (1 - theta) M (where a point beats it by delta
in both, theta (W + delta) + (1 - theta) (M + delta) <= U(theta) for every theta).

usage: grid-event-front.py PFI OUT_DIR [--jobs CSV] [--tiers CSV] [--json]
  PFI: the pfi executable; OUT_DIR: a `pfi demo grid-event --out` directory (the audit logs
  STRATEGY.db, reference.csv). Needs NumPy.
"""
import csv
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile

import numpy as np

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOW = {1: 0.10, 2: 0.25, 3: 0.50}
CAPS = np.arange(100, 401)
THETAS = [i / 10 for i in range(11)]


def fail(msg):
    print(f"grid-event-front: {msg}", file=sys.stderr)
    sys.exit(1)


def args():
    a = sys.argv[1:]
    opt = {"jobs": os.path.join(SRC, "scripts/grid-event-jobs.csv"),
           "tiers": os.path.join(SRC, "data/emerald_phoenix_2025/SRP_exp_performance.csv"),
           "json": False}
    pos = []
    i = 0
    while i < len(a):
        if a[i] in ("--jobs", "--tiers") and i + 1 < len(a):
            opt[a[i][2:]] = a[i + 1]
            i += 2
        elif a[i] == "--json":
            opt["json"] = True
            i += 1
        else:
            pos.append(a[i])
            i += 1
    if len(pos) != 2:
        fail("usage: grid-event-front.py PFI OUT_DIR [--jobs CSV] [--tiers CSV] [--json]")
    return pos[0], pos[1], opt


def read_jobs(path):
    rows = list(csv.DictReader(l for l in open(path) if not l.startswith("#")))
    if not rows:
        fail(f"{path}: no job")
    return rows


def read_tiers(path):
    out = {}
    for r in csv.DictReader(open(path)):
        name, tier = r["Model"].strip(), (r.get("Flexibility") or "").strip()
        if name and tier:
            out[name] = ALLOW[int(tier.split()[-1])]
    return out


def true_curves(pfi, jobs):
    """Each job's (power W, tokens/s) at every whole-watt cap: the demo's emulated GPUs (its
    spec, seed k + 1) swept without reading noise (tau 0.05 s: settled within the warm-up)."""
    curves = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "true.db")
        for k, r in enumerate(jobs, start=1):
            spec = (f"gpus={r['gpus']},alpha={r['alpha']},pu={r['pu_w']},ps={r['ps_w']},"
                    f"gamma={r['gamma']},fmin={r['fmin_mhz']},tdp=400,min=100,max=400,"
                    f"tput={r['tput']},startup=0,ckpt=0,seed={k + 1},noise=0,tau=0.05")
            for lo in range(100, 401, 50):
                caps = ",".join(str(c) for c in range(min(lo + 49, 400), lo - 1, -1))
                p = subprocess.run([pfi, "sweep", "--backend", "emulated", "--emulate", spec,
                                    "--caps", caps, "--duration", "10s", "--interval", "5s",
                                    "--warmup", "5s", "--group", r["job"], "--db", db],
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    fail(f"pfi sweep ({r['job']}): {p.stderr.strip()[-400:]}")
        c = sqlite3.connect(db)
        for r in jobs:
            pts = c.execute("SELECT r.cap_w, r.power_w, r.throughput FROM runs r JOIN groups g"
                            " ON g.id = r.group_id WHERE g.name = ? ORDER BY r.cap_w",
                            (r["job"],)).fetchall()
            a = np.array(pts)
            if len(a) != len(CAPS) or not np.array_equal(a[:, 0], CAPS):
                fail(f"{r['job']}: the sweep has {len(a)} caps, expected 100-400 W")
            curves[r["job"]] = {"power": a[:, 1], "tput": a[:, 2]}
    return curves


def read_log(path, jobs):
    """The event rows, budgets, each row's caps per job (None: uncapped), the life rows."""
    c = sqlite3.connect(path)
    margin = json.loads(c.execute("SELECT config FROM ctl_runs ORDER BY id DESC LIMIT 1")
                        .fetchone()[0])["margin"]
    run = c.execute("SELECT max(run) FROM ctl_periods").fetchone()[0]
    per = c.execute("SELECT id, event, budget_w FROM ctl_periods WHERE run = ? ORDER BY id",
                    (run,)).fetchall()
    caps, life, live = {}, {}, {}
    for pid, job, g, cap, ref, tp in c.execute(
            "SELECT period, job, gpus, cap_w, ref_tput, tput FROM ctl_jobs ORDER BY rowid"):
        caps[(pid, job)] = cap
        if ref is not None and ref > 0 and tp is not None:
            life[job] = life.get(job, 0) + 1
            live[job] = ref * g  # the controller's reference, learnt before the event
    ev = [k for k, p in enumerate(per) if p[1] == 1]
    a, b = ev[0], ev[-1] + 1
    if ev != list(range(a, b)) or a == 0:
        fail(f"{path}: the event rows are not one run of rows after a pre-event row")
    return {"margin": margin, "per": per, "a": a, "b": b, "caps": caps, "life": life,
            "live_ref": live}


def perf_at(curves, refs, job, cap):
    t = curves[job]["tput"][int(cap) - 100] if cap is not None else curves[job]["tput"][-1]
    return t / refs[job]


def strategy_point(log, curves, refs, gpus):
    """The strategy's event performance per job on the true curves (the settlement's rows,
    the reading noise aside) and its (weighted, mean)."""
    per, a, b = log["per"], log["a"], log["b"]
    perf = {}
    for j in gpus:
        perf[j] = np.mean([perf_at(curves, refs, j, log["caps"].get((per[k][0], j)))
                           for k in range(a, b)])
    G = sum(gpus.values())
    return (sum(gpus[j] * perf[j] for j in gpus) / G, sum(perf.values()) / len(perf), perf)


def upper_hull(P, y):
    """The indices of the upper concave envelope of the points (P[i], y[i]), P and y
    non-decreasing, from the first point (the lowest cap) on; of points of equal P the last."""
    h = []
    for i in range(len(P)):
        if h and P[i] == P[h[-1]]:
            h.pop()
        while len(h) >= 2:
            a, b = h[-2], h[-1]
            # b under the chord a -> i: drop it
            if (y[b] - y[a]) * (P[i] - P[a]) <= (y[i] - y[a]) * (P[b] - P[a]):
                h.pop()
            else:
                break
        h.append(i)
    return h


def row_lp(names, k, P, y, hull, budget):
    """max sum_j k_j y_j(c_j) subject to sum_j P_j(c_j) <= budget, relaxed to each job's
    upper concave envelope with the power continuous (an upper bound on every whole-watt
    allocation), and a whole-watt allocation within it: every job at an envelope vertex, the
    one the budget splits at its highest cap that fits. Returns (bound, value, picks) or None
    when the budget is below every job at its lowest cap."""
    left = budget - sum(P[j][hull[j][0]] for j in names)
    if left < 0:
        return None
    bound = value = sum(k[j] * y[j][hull[j][0]] for j in names)
    segs = []
    for j in names:
        h = hull[j]
        for a, b in zip(h, h[1:]):
            segs.append((k[j] * (y[j][b] - y[j][a]) / (P[j][b] - P[j][a]), j, a, b))
    segs.sort(key=lambda s: -s[0])
    pick = {j: hull[j][0] for j in names}
    split = None
    for slope, j, a, b in segs:
        if split is not None:
            continue
        dp = P[j][b] - P[j][a]
        if dp <= left:
            left -= dp
            bound += k[j] * (y[j][b] - y[j][a])
            value += k[j] * (y[j][b] - y[j][a])
            pick[j] = b
        else:
            bound += slope * left
            split = (j, a, b)
    if split is not None:
        j, a, b = split
        fit = [i for i in range(a, b) if P[j][i] - P[j][a] <= left]
        i = max(fit, key=lambda i: y[j][i])
        value += k[j] * (y[j][i] - y[j][a])
        pick[j] = i
    return bound, value, pick


class Event:
    """The event's decision rows and the tiers, for one audit log's budgets."""

    def __init__(self, log, curves, refs, gpus, allow):
        self.names = sorted(gpus)
        self.gpus, self.allow = gpus, allow
        per, a, b = log["per"], log["a"], log["b"]
        self.N = b - a  # the event rows the scores average
        self.D = b - a  # decision rows: the caps of rows a .. b - 1, each row's time scored
        # (read by the row after it; the event's last row's time by row b)
        self.scored = [True for k in range(a, b)]
        self.rows = [(per[k][2] * (1 - log["margin"]), True) for k in range(a, b)]
        self.rows_bound = self.rows
        self.perf = {j: curves[j]["tput"] / refs[j] for j in self.names}
        self.power = {j: curves[j]["power"] for j in self.names}
        self.hull = {j: upper_hull(self.power[j], self.perf[j]) for j in self.names}
        self.L = {j: log["life"][j] for j in self.names}
        # sum of the decision rows' performance a job needs: its life-average >= 1 -
        # allowance as the settlement judges it, against the controller's reference (its
        # learnt uncapped tokens/s, rho = true / learnt: a row's tokens/s count up to it),
        # the L - D rows outside the decisions uncapped
        rho = {j: refs[j] / log["live_ref"][j] for j in self.names}
        self.need = {j: ((1 - allow[j]) * self.L[j] - (self.L[j] - self.D) * min(rho[j], 1))
                     / rho[j] if j in allow else -np.inf for j in self.names}

    def weights(self, theta):
        G, n = sum(self.gpus.values()), len(self.names)
        return {j: theta * self.gpus[j] / G + (1 - theta) / n for j in self.names}

    def solve(self, theta, mu, rows=None):
        """The Lagrangian's maximiser: each row group's caps, the dual value (an upper bound:
        each row's problem relaxed to the envelopes) and the caps' own value."""
        rows = rows or self.rows
        count = {g: rows.count(g) for g in set(rows)}
        v = self.weights(theta)
        sol = {}
        dual = primal = 0.0
        for g in sorted(count):
            budget, scored = g
            k = {j: v[j] / self.N * scored + mu[j] for j in self.names}
            r = row_lp(self.names, k, self.power, self.perf, self.hull, budget)
            if r is None:
                fail(f"a row's budget {budget:.0f} W is below every job at 100 W")
            sol[g] = r[2]
            dual += count[g] * r[0]
            primal += count[g] * r[1]
        dual -= sum(mu[j] * self.need[j] for j in self.names if mu[j] > 0)
        return sol, dual

    def slack(self, rows):
        """Each job's decision rows' performance sum less what its tier needs."""
        return {j: sum(self.perf[j][r[j]] for r in rows) - self.need[j] for j in self.names}

    def score(self, rows):
        v1 = self.weights(1.0)
        v0 = self.weights(0.0)
        W = M = 0.0
        for j in self.names:
            s = sum(self.perf[j][r[j]] for r, scored in zip(rows, self.scored)
                    if scored) / self.N
            W += v1[j] * s
            M += v0[j] * s
        return W, M

    def expand(self, sol):
        return [sol[g] for g in self.rows]

    def front_point(self, theta):
        """(dual upper bound, primal W, M, the tiers' multipliers) at theta."""
        mu = {j: 0.0 for j in self.names}
        best_dual = None
        for _ in range(3):  # coordinate bisection over the jobs whose tier binds
            sol, dual = self.solve(theta, mu)
            sl = self.slack(self.expand(sol))
            short = [j for j in self.names if sl[j] < -1e-12]
            if not short and all(mu[j] == 0 or sl[j] < 1e-6 for j in self.names):
                break
            for j in self.names:
                if sl[j] >= -1e-12 and mu[j] == 0:
                    continue
                lo, hi = 0.0, 1.0
                while True:
                    mu[j] = hi
                    s2, _ = self.solve(theta, mu)
                    if self.slack(self.expand(s2))[j] >= 0:
                        break
                    lo, hi = hi, 2 * hi
                for _ in range(40):
                    mu[j] = (lo + hi) / 2
                    s2, _ = self.solve(theta, mu)
                    if self.slack(self.expand(s2))[j] >= 0:
                        hi = mu[j]
                    else:
                        lo = mu[j]
                mu[j] = hi
                self._lo = dict(mu, **{j: lo})
        sol_hi, _ = self.solve(theta, mu)
        # the bound: the scores' own objective
        _, dual = self.solve(theta, mu, self.rows_bound)
        rows = self.expand(sol_hi)
        # the primal: the feasible solution's rows swapped one by one for the bracketing
        # infeasible one's while every tier still holds (time-sharing at the rows' grain)
        if any(mu[j] > 0 for j in self.names):
            sol_lo, _ = self.solve(theta, self._lo)
            lo_rows = self.expand(sol_lo)
            sl = self.slack(rows)
            for k in range(len(rows)):
                d = {j: self.perf[j][lo_rows[k][j]] - self.perf[j][rows[k][j]]
                     for j in self.names}
                if all(sl[j] + d[j] >= -1e-12 for j in self.allow):
                    rows[k] = lo_rows[k]
                    sl = {j: sl[j] + d[j] for j in self.names}
        if any(s < -1e-9 for j, s in self.slack(rows).items() if j in self.allow):
            fail(f"theta {theta}: no allocation keeps every tier")
        W, M = self.score(rows)
        return dual, W, M, dict(mu)


def main():
    pfi, out, opt = args()
    jobs = read_jobs(opt["jobs"])
    allow_all = read_tiers(opt["tiers"])
    gpus = {r["job"]: int(r["gpus"]) for r in jobs}
    allow = {j: allow_all[j] for j in gpus if j in allow_all}
    curves = true_curves(pfi, jobs)
    refs = {j: curves[j]["tput"][-1] for j in gpus}
    # the same GPUs as the demo's: its reference tokens/s (noise-free, 400 W) are these
    for r in csv.DictReader(open(os.path.join(out, "reference.csv"))):
        if r["job"] in refs and not math.isclose(float(r["tput_tok_s"]), refs[r["job"]],
                                                 rel_tol=1e-6):
            fail(f"{r['job']}: reference.csv {r['tput_tok_s']} tok/s, the sweep "
                 f"{refs[r['job']]}: not the demo's GPUs")
    strategies = [s for s in ("equal", "fair-headroom", "pfi-weighted", "pfi-model", "oracle")
                  if os.path.exists(os.path.join(out, f"{s}.db"))]
    if not strategies:
        fail(f"{out}: no audit log")
    logs = {s: read_log(os.path.join(out, f"{s}.db"), gpus) for s in strategies}
    # every strategy's event has the same budgets (the schedule times the reference power
    # they all measured before the event): the front of one is the front of all
    base = logs[strategies[0]]
    for s in strategies[1:]:
        same = [round(p[2] or 0, 3) for p in logs[s]["per"]] == \
               [round(p[2] or 0, 3) for p in base["per"]]
        if not same or logs[s]["margin"] != base["margin"]:
            fail(f"{s}: not the same budgets as {strategies[0]}")
    ev = Event(base, curves, refs, gpus, allow)
    front = []
    for th in THETAS:
        dual, W, M, mu = ev.front_point(th)
        front.append({"theta": th, "upper_bound": dual, "weighted": W, "mean": M,
                      "gap": dual - (th * W + (1 - th) * M)})
    pts = {}
    for s in strategies:
        W, M, perf = strategy_point(logs[s], curves, refs, gpus)
        delta = min(f["upper_bound"] - (f["theta"] * W + (1 - f["theta"]) * M) for f in front)
        pts[s] = {"weighted": W, "mean": M, "dominance_margin": delta,
                  "per_job": {j: perf[j] for j in sorted(perf)}}
    doc = {"front": front, "strategies": pts, "rows": ev.N}
    # a strategy above the bound: the bound or the strategy's point is wrong
    above = [s for s, p in pts.items() if p["dominance_margin"] < -1e-9]
    if opt["json"]:
        print(json.dumps(doc, indent=1))
        sys.exit(1 if above else 0)
    print(f"the exact (weighted, mean) front of the event ({ev.N} rows, true curves, whole-watt "
          f"caps, tiers kept):")
    print(f"  {'theta':>5} {'weighted':>9} {'mean':>8} {'bound':>9} {'gap':>8}")
    for f in front:
        print(f"  {f['theta']:5.2f} {f['weighted']:9.5f} {f['mean']:8.5f} "
              f"{f['upper_bound']:9.5f} {f['gap']:8.1e}")
    print("the strategies on the true curves (the settlement less the reading noise); "
          "margin: the most any allocation can beat it by in both scores")
    print(f"  {'strategy':14} {'weighted':>9} {'mean':>8} {'margin':>8}")
    for s, p in pts.items():
        print(f"  {s:14} {p['weighted']:9.5f} {p['mean']:8.5f} {p['dominance_margin']:8.5f}")
    if above:
        fail(f"{', '.join(above)}: above the front's upper bound")


if __name__ == "__main__":
    main()
