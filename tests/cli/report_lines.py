#!/usr/bin/env python3
"""Check the budget lines of a `pfi report` figure written as SVG (PLplot's svgcairo).

Usage: report_lines.py FIGURE.svg RUNS [FROM TO DATA_END]

PLplot draws a dashed line as one short path per dash ("M x y L x y"), a solid line as one
path through all its points, in the series colour. For each of the RUNS runs (told apart by
the colour of their solid data lines) the figure must have:
  - a dashed budget line in that run's colour inside the plot (no grey budget line shared by
    every run), with a dash pattern of its own (runs' budgets are often the same line, so
    colour alone is not enough where they overlap);
  - a dashed legend sample in that colour right of the plot, beside the solid samples: the
    legend names the budget line of every run.
With FROM TO DATA_END (seconds; every run's data line runs from 0 to DATA_END): each run's
budget line covers FROM to TO, its event, within 0.2 s: a period's budget is drawn to the
period's end, not stopped at the last period's start.
Exit 0 when all hold; 1 with what is missing on stdout. Standard library only.
"""
import re
import statistics
import sys

PATH = re.compile(r'<path style="([^"]*)" d="([^"]*)"')
NUM = re.compile(r"-?[0-9.]+")


def segments(svg):
    """(colour, points) of every stroked path."""
    out = []
    for style, d in PATH.findall(svg):
        m = re.search(r"stroke:(rgb\([^)]*\))", style)
        if m is None or "fill:none" not in style:
            continue
        if not re.fullmatch(r"\s*M[-0-9. ]+(L[-0-9. ]+)*", d):
            continue  # curves or glyph outlines: not lines
        v = [float(x) for x in NUM.findall(d)]
        out.append((m.group(1), list(zip(v[0::2], v[1::2]))))
    return out


def main(argv):
    if len(argv) not in (3, 6):
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        svg = f.read()
    runs = int(argv[2])
    black = "rgb(0%,0%,0%)"
    segs = [s for s in segments(svg) if s[0] != black]
    data = [s for s in segs if len(s[1]) > 2]
    colours = sorted({c for c, _ in data})
    problems = []
    if len(colours) != runs:
        problems.append("expected %d run colours in the data lines, found %s" % (runs, colours))
    right = max((x for _, pts in data for x, _ in pts), default=0.0)
    patterns = {}
    for c in colours:
        short = [pts for cc, pts in segs if cc == c and len(pts) == 2]
        inside = [abs(p[1][0] - p[0][0]) + abs(p[1][1] - p[0][1]) for p in short
                  if max(p[0][0], p[1][0]) <= right + 0.5]
        legend = [abs(p[1][0] - p[0][0]) for p in short if min(p[0][0], p[1][0]) > right + 0.5]
        if len(inside) < 5:
            problems.append("%s: no dashed budget line in the run's colour (%d dashes)"
                            % (c, len(inside)))
        else:
            patterns[c] = round(statistics.median(inside), 1)
        full = max(legend, default=0.0)
        dashes = [x for x in legend if x < 0.8 * full]
        if len(dashes) < 2:
            problems.append("%s: no dashed budget sample in the legend (legend segments %s)"
                            % (c, sorted(round(x, 1) for x in legend)))
    if len(argv) == 6 and data:
        t_from, t_to, t_end = (float(a) for a in argv[3:6])
        x0 = min(x for _, pts in data for x, _ in pts)
        scale = (right - x0) / t_end  # svg units a second
        for c in colours:
            xs = [x for cc, pts in segs if cc == c and len(pts) == 2 for x, _ in pts
                  if x <= right + 0.5]
            if not xs:
                continue
            lo, hi = (min(xs) - x0) / scale, (max(xs) - x0) / scale
            if abs(lo - t_from) > 0.2 or abs(hi - t_to) > 0.2:
                problems.append("%s: budget line from %.2f s to %.2f s, expected %g to %g"
                                % (c, lo, hi, t_from, t_to))
    if len(set(patterns.values())) < len(patterns):
        problems.append("runs share a dash pattern: %s" % patterns)
    others = sorted({c for c, pts in segs if len(pts) == 2 and c not in colours})
    if others:
        problems.append("dashes in colours of no run (a shared budget line?): %s" % others)
    for p in problems:
        print("%s: %s" % (argv[1], p))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
