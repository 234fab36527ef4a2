#!/usr/bin/env python3
"""Check the shape of one run's lines in a `pfi report` figure written as SVG (svgcairo).

Usage: report_shape.py FIGURE.svg DATA_RUNS

The figure holds one controller run whose budget ramps (a schedule's linear ramp) and whose
tokens/s are missing for some periods in the middle. PLplot draws a solid line as one path
through its points and a dashed line as one short path per dash. The figure must have:
  - DATA_RUNS solid data paths (more than two points) in the run's colour: the power line in
    one piece and the tokens/s line broken where it is missing (neither drawn as 0 nor bridged
    by a straight line), e.g. 3;
  - budget dashes that slope (both dx and dy clearly non-zero): the ramp drawn as a ramp, not
    as a staircase of horizontal and vertical dashes.
Exit 0 when both hold; 1 with what is wrong on stdout. Standard library only.
"""
import re
import sys

PATH = re.compile(r'<path style="([^"]*)" d="([^"]*)"')
NUM = re.compile(r"-?[0-9.]+")


def segments(svg):
    out = []
    for style, d in PATH.findall(svg):
        m = re.search(r"stroke:(rgb\([^)]*\))", style)
        if m is None or "fill:none" not in style:
            continue
        if not re.fullmatch(r"\s*M[-0-9. ]+(L[-0-9. ]+)*", d):
            continue
        v = [float(x) for x in NUM.findall(d)]
        out.append((m.group(1), list(zip(v[0::2], v[1::2]))))
    return out


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        svg = f.read()
    want = int(argv[2])
    segs = [s for s in segments(svg) if s[0] != "rgb(0%,0%,0%)"]
    data = [s for s in segs if len(s[1]) > 2]
    colours = sorted({c for c, _ in data})
    problems = []
    if len(colours) != 1:
        problems.append("expected one run colour in the data lines, found %s" % colours)
    else:
        c = colours[0]
        n = sum(1 for cc, _ in data if cc == c)
        if n != want:
            problems.append("%d solid data paths, expected %d (tokens/s broken at the missing "
                            "periods)" % (n, want))
        right = max(x for _, pts in data for x, _ in pts)
        sloped = [p for cc, p in segs if cc == c and len(p) == 2 and max(p[0][0], p[1][0]) <= right
                  and abs(p[1][0] - p[0][0]) > 0.3 and abs(p[1][1] - p[0][1]) > 0.3]
        if len(sloped) < 3:
            problems.append("%d sloping budget dashes: the ramp is drawn as steps" % len(sloped))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
