#!/usr/bin/python3
"""alloc_diff_tol.py OLD NEW TOL — compare two outputs of bench/alloc_diff.sh's runs (the
library's hexadecimal dumps or the command's tables) number by number: every token equal,
or both numbers (decimal or C99 hexadecimal, after an optional 'name=') within
TOL x (|a| + |b|) + 1e-6 (W, tokens/s; the floor for values that rounding leaves near 0).
Prints how many numbers differ at all and the largest relative difference; exit 0 when
every difference is within the tolerance, 1 otherwise (the first ones printed)."""
import math
import re
import sys


def num(tok):
    tok = tok.rstrip(",;)").lstrip("(")
    if "=" in tok:
        tok = tok.split("=", 1)[1]
    try:
        if re.fullmatch(r"[-+]?0x[0-9a-fA-F.]+p[-+]?\d+", tok):
            return float.fromhex(tok)
        return float(tok)
    except ValueError:
        return None


def tokens(path):
    with open(path) as f:
        return re.split(r"[\s,\"]+", f.read())


def main():
    old, new, tol = tokens(sys.argv[1]), tokens(sys.argv[2]), float(sys.argv[3])
    if len(old) != len(new):
        print("different token counts: %d / %d" % (len(old), len(new)))
        return 1
    differ, worst, bad = 0, 0.0, []
    for i, (a, b) in enumerate(zip(old, new)):
        if a == b:
            continue
        x, y = num(a), num(b)
        if x is None or y is None or math.isnan(x) != math.isnan(y):
            bad.append("token %d: %s / %s" % (i, a, b))
            continue
        differ += 1
        d = abs(x - y)
        rel = d / (abs(x) + abs(y)) if x != y else 0.0
        worst = max(worst, rel)
        if d > tol * (abs(x) + abs(y)) + 1e-6:
            bad.append("token %d: %s / %s (relative %.2e)" % (i, a, b, rel))
    print("%d numbers differ, largest relative difference %.2e, %d beyond tolerance %g"
          % (differ, worst, len(bad), tol))
    for line in bad[:10]:
        print("  " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
