#!/usr/bin/env python3
"""Every example of the README and docs/ runs, and prints what the page shows.

    doc_examples.py BIN_DIR SOURCE_DIR [PAGE.md ...]
    doc_examples.py --self-test BIN_DIR SOURCE_DIR   (tests/data/doc_examples/fixture.md)

Reads README.md and docs/**/*.md (docs/pending/ left out: notes not yet integrated), or the
pages given, and runs their command blocks, page by page, each page in a scratch folder of
its own that holds `data`, `examples` and `scripts` (links into the source tree), with
BIN_DIR (pfi, pfid) first on PATH and TZ=UTC. A fenced block's language says what it is:

- ```sh: commands; the block runs as one bash script (set -e, pipefail) and must exit 0;
- ```console: `$ COMMAND` lines (a line ending in a backslash continues), each followed by
  the output it shows; every command runs and its standard output must match what is
  shown (nothing shown: not compared). In what is shown, `...` stands for text left out
  of a line and a line holding only `...` for lines left out;
- any other language (text, json, csv, ...): not a command; a block without a language,
  or a text block of `$ ` lines, is an error (say what it is).

An HTML comment right before a block (blank lines between allowed) changes it:
`<!-- no-run: REASON -->` skips it, printed with its reason (a real GPU, root, a Slurm
cluster, a long demo); `<!-- exit: N -->` the last command exits N instead of 0;
`<!-- output: stderr -->` compares standard error instead of standard output;
`<!-- output-of: COMMAND -->` before a text block runs COMMAND and compares its standard
output with the block. Every process a block starts is stopped after it (its own session).
The README's output-of command must be the analyze line of scripts/quickstart.sh; every
relative link must name a file that exists (and a same-page anchor a heading).
Exit 0 when every block ran as shown; 1 otherwise, naming page, line and difference.
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

COMMAND_LANGS = ("sh", "console")
TIMEOUT_S = 120
MARKER = re.compile(r"^\s*<!--\s*(no-run|exit|output|output-of):\s*(.*?)\s*-->\s*$")


def blocks_of(path):
    """[(line, lang, [lines], {marker: value})] of a Markdown page's fenced blocks."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    markers = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            markers[m.group(1)] = m.group(2)
            i += 1
            continue
        fence = re.match(r"^(\s*)```(\S*)\s*$", line)
        if fence:
            indent, lang = len(fence.group(1)), fence.group(2)
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                text = lines[i]
                body.append(text[indent:] if not text[:indent].strip() else text.lstrip())
                i += 1
            out.append((start, lang, body, markers))
            markers = {}
            i += 1
            continue
        if line.strip() and not line.lstrip().startswith("<!--"):
            markers = {}  # a marker belongs to the block right after it
        i += 1
    return out


def indented_blocks(path):
    """Line numbers of indented (4-space) code blocks outside fences and lists: each must be
    a fenced block with a language, so that no command escapes this test."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found = []
    fenced = False
    prev = ""  # the last non-blank line
    for k, line in enumerate(lines):
        if re.match(r"^\s*```", line):
            fenced = not fenced
        elif not fenced and line.startswith("    ") and line.strip() and k and \
                not lines[k - 1].strip() and not prev.startswith((" ", "-", "|")) and \
                not re.match(r"^[0-9]+\. ", prev):
            found.append(k + 1)
        if line.strip():
            prev = line
    return found


def broken_links(path, src):
    """[(line, target)] of relative Markdown links and images whose file does not exist,
    and of same-page anchors (#...) that no heading of the page gives (GitHub's slugs)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    slugs = set()
    fenced = False
    for line in lines:
        if re.match(r"^\s*```", line):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            slugs.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    bad = []
    fenced = False
    for k, line in enumerate(lines):
        if re.match(r"^\s*```", line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            if file:
                full = os.path.normpath(os.path.join(os.path.dirname(path), file))
                if not full.startswith(src) or not os.path.exists(full):
                    bad.append((k + 1, target))
            elif anchor not in slugs:
                bad.append((k + 1, target))
    return bad


def parse_console(body):
    """console block -> [(command, [shown output lines])]."""
    cmds = []
    i = 0
    while i < len(body):
        if not body[i].startswith("$ "):
            if cmds:
                cmds[-1][1].append(body[i])
            i += 1
            continue
        cmd = [body[i][2:]]
        while cmd[-1].endswith("\\") and i + 1 < len(body):
            i += 1
            cmd.append(body[i])
        cmds.append(("\n".join(cmd), []))
        i += 1
    return cmds


def pattern(line):
    """A shown output line as a regex: '...' is any text."""
    return re.compile("^" + ".*".join(re.escape(p) for p in line.split("...")) + "$")


def matches(shown, got):
    """Whether the output got fits what is shown (see the module's text)."""
    shown = [s.rstrip() for s in shown]
    got = [g.rstrip() for g in got]
    while shown and not shown[-1]:
        shown.pop()
    while got and not got[-1]:
        got.pop()
    pats = [None if s.strip() == "..." else pattern(s) for s in shown]
    memo = {}

    def fit(a, b):
        if (a, b) in memo:
            return memo[(a, b)]
        if a == len(pats):
            r = b == len(got)
        elif pats[a] is None:
            r = any(fit(a + 1, k) for k in range(b, len(got) + 1))
        else:
            r = b < len(got) and bool(pats[a].match(got[b])) and fit(a + 1, b + 1)
        memo[(a, b)] = r
        return r

    return fit(0, 0)


def run(script, cwd, env):
    """Run a bash script in its own session; stop whatever it left running (a daemon it
    started in the background) as soon as the script itself ends. Output goes to files, so
    a process left behind holding them cannot keep the test waiting."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd,
                                env=env, stdout=out, stderr=err, start_new_session=True)
        try:
            rc = proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            rc = "timeout (%d s)" % TIMEOUT_S
        try:
            os.killpg(proc.pid, signal.SIGKILL if isinstance(rc, str) else signal.SIGTERM)
        except ProcessLookupError:
            pass
        proc.wait()
        out.seek(0)
        err.seek(0)
        return rc, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")


def scratch(src):
    d = tempfile.mkdtemp(prefix="pfi-doc-examples.")
    for name in ("data", "examples", "scripts"):
        os.symlink(os.path.join(src, name), os.path.join(d, name))
    return d


def quickstart_command(src):
    """The analyze line of scripts/quickstart.sh as a user types it, without the figure."""
    with open(os.path.join(src, "scripts", "quickstart.sh"), encoding="utf-8") as f:
        line = next((l for l in f if l.startswith("./build/pfi analyze")), "")
    line = re.sub(r" --plot \S+", "", line.strip())
    return line.replace("./build/pfi", "pfi", 1)


def self_test(bindir, src):
    """Run this script on tests/data/doc_examples/fixture.md, whose text says which lines
    must fail: exactly those fail, its no-run block is skipped, the rest ran."""
    page = os.path.join(src, "tests", "data", "doc_examples", "fixture.md")
    with open(page, encoding="utf-8") as f:
        want = sorted(int(n) for n in re.findall(r"\(FAIL at line ([0-9]+)\)", f.read()))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), bindir, src, page],
                         capture_output=True, text=True)
    got = sorted(int(n) for n in re.findall(r"^FAIL [^:]+:([0-9]+):", out.stdout, re.M))
    ok = out.returncode == 1 and got == want and "1 skipped" in out.stdout and \
        "4 blocks ran (5 commands, 4 outputs compared)" in out.stdout
    print(out.stdout)
    print("self-test: %s (failures at lines %s, expected %s)" % ("ok" if ok else "FAILED", got, want))
    return 0 if ok else 1


def main():
    if sys.argv[1:2] == ["--self-test"] and len(sys.argv) == 4:
        return self_test(os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3]))
    if len(sys.argv) < 3:
        sys.exit("usage: doc_examples.py BIN_DIR SOURCE_DIR [PAGE.md ...]")
    bindir, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    pages = [os.path.abspath(p) for p in sys.argv[3:]] or (
        [os.path.join(src, "README.md")] +
        sorted(p for p in glob.glob(os.path.join(src, "docs", "**", "*.md"), recursive=True)
               if "/docs/pending/" not in p))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), TZ="UTC",
               LC_ALL="C.UTF-8", COLUMNS="100")
    env.pop("PFI_DATA_DIR", None)
    failures = []
    ran = commands = compared = 0
    skipped = []
    started = time.monotonic()
    qs = quickstart_command(src)
    qs_shown = False
    for page in pages:
        rel = os.path.relpath(page, src)
        blocks = blocks_of(page)
        for line, target in broken_links(page, src):
            failures.append("%s:%d: a link to %s, which does not exist" % (rel, line, target))
        for line in indented_blocks(page):
            failures.append("%s:%d: an indented code block: fence it with a language (sh, "
                            "console, text, ...)" % (rel, line))
        cwd = None
        for line, lang, body, markers in blocks:
            where = "%s:%d" % (rel, line)
            if "output-of" in markers:
                if lang in COMMAND_LANGS:
                    failures.append("%s: output-of is for a block of output, not %s" % (where, lang))
                    continue
                if rel == "README.md" and markers["output-of"] == qs:
                    qs_shown = True
            elif lang not in COMMAND_LANGS:
                if not lang:
                    failures.append("%s: a block without a language: tag it (sh, console, "
                                    "text, ...)" % where)
                elif any(l.startswith("$ ") for l in body):
                    failures.append("%s: a %s block of '$ ' commands: make it console" % (where, lang))
                continue
            if "no-run" in markers:
                if not markers["no-run"]:
                    failures.append("%s: no-run without a reason" % where)
                skipped.append("%s (%s)" % (where, markers["no-run"]))
                continue
            if cwd is None:
                cwd = scratch(src)
            want_rc = int(markers.get("exit", "0"))
            stream = markers.get("output", "stdout")
            if "output-of" in markers:
                steps = [(markers["output-of"], body)]
            elif lang == "sh":
                steps = [("\n".join(body), [])]
            else:
                steps = parse_console(body)
                if not steps:
                    failures.append("%s: a console block without a '$ ' command" % where)
                    continue
            ran += 1
            for k, (cmd, shown) in enumerate(steps):
                commands += 1
                rc, out, err = run(cmd, cwd, env)
                expect = want_rc if k == len(steps) - 1 else 0
                first = cmd.split("\n")[0]
                if rc != expect:
                    failures.append("%s: `%s` exited %s, expected %d\n%s" % (
                        where, first, rc, expect, "\n".join((out + err).splitlines()[-15:])))
                    break
                if any(s.strip() for s in shown):
                    compared += 1
                    got = (err if stream == "stderr" else out).split("\n")
                    if not matches(shown, got):
                        failures.append("%s: `%s` printed (%s):\n%s\n--- the page shows:\n%s" % (
                            where, first, stream, "\n".join(got[:40]), "\n".join(shown[:40])))
        if cwd:
            shutil.rmtree(cwd, ignore_errors=True)
    if len(sys.argv) == 3 and not qs_shown:
        failures.append("README.md: no <!-- output-of: %s --> block (the quick start's "
                        "analyze line)" % qs)
    for f in failures:
        print("FAIL " + f)
    for s in skipped:
        print("skip " + s)
    print("doc_examples: %d blocks ran (%d commands, %d outputs compared), %d skipped, "
          "%d failed, %.1f s" % (ran, commands, compared, len(skipped), len(failures),
                                 time.monotonic() - started))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
