#!/usr/bin/env python3
"""Checks a Prometheus text exposition (0.0.4) for what promtool does not catch: a family
split in two (its samples not together, or HELP/TYPE twice), the same series twice, a sample
before its TYPE or of another family, a missing final newline, CR line ends, NaN values.
Usage: check_metrics.py FILE  (exit 0 when clean; one line per problem on stdout)"""
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


def labels_of(text):
    out, pos = [], 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            raise ValueError("bad label set {%s}" % text)
        out.append((m.group(1), m.group(2)))
        pos = m.end()
    return tuple(sorted(out))


def family_of(name, types):
    if name in types:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in types:
            return name[: -len(suffix)]
    return None


def check(data):
    problems = []
    if not data.endswith("\n"):
        problems.append("no final newline")
    if "\r" in data:
        problems.append("CR in the exposition")
    help_seen, types, closed, series = set(), {}, set(), set()
    current = None
    for n, line in enumerate(data.split("\n")[:-1], 1):
        if line.startswith("# HELP "):
            name = line.split(" ")[2]
            if name in help_seen:
                problems.append("line %d: HELP of %s twice (split family)" % (n, name))
            help_seen.add(name)
            if current and current != name:
                closed.add(current)
            current = name
            continue
        if line.startswith("# TYPE "):
            parts = line.split(" ")
            name = parts[2]
            if name in types:
                problems.append("line %d: TYPE of %s twice (split family)" % (n, name))
            types[name] = parts[3]
            if current and current != name:
                closed.add(current)
            current = name
            continue
        if line.startswith("#") or line == "":
            if line == "":
                problems.append("line %d: empty line" % n)
            continue
        m = SAMPLE.match(line)
        if not m:
            problems.append("line %d: not a sample: %r" % (n, line))
            continue
        name, lab, val = m.group(1), m.group(3) or "", m.group(4)
        fam = family_of(name, types)
        if fam is None:
            problems.append("line %d: sample %s before its TYPE" % (n, name))
            continue
        if fam in closed or fam != current:
            problems.append("line %d: %s sample outside its family's block (split family)" % (n, name))
        try:
            key = (name, labels_of(lab))
        except ValueError as e:
            problems.append("line %d: %s" % (n, e))
            continue
        if key in series:
            problems.append("line %d: duplicate series %s{%s}" % (n, name, lab))
        series.add(key)
        if val.lower() in ("nan",):
            problems.append("line %d: NaN value (a missing value must have no sample)" % n)
    return problems


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    found = check(text)
    for p in found:
        print(p)
    sys.exit(1 if found else 0)
