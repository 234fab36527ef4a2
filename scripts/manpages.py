#!/usr/bin/env python3
"""Man pages and bash completion of pfi and pfid, made from the programs' own --help.

    manpages.py PFI PFID SOURCE_DIR OUT_DIR

writes OUT_DIR/man1/pfi.1, OUT_DIR/man1/pfi-VERB.1 (one page per command of `pfi --help`),
OUT_DIR/man8/pfid.8, OUT_DIR/man5/pfid.conf.5 and OUT_DIR/completions/{pfi,pfid}.

One source: every page's SYNOPSIS, DESCRIPTION, OPTIONS and EXIT STATUS are the command's
`--help` text (so the page and --help cannot drift; tests/man.sh compares them anyway);
pfid.conf(5) lists every key of examples/pfid.conf, the shipped default configuration,
with its default and comment. The rest of a page is the command's manual:
docs/commands/pfi-VERB.md (docs/commands/pfid.md for pfid(8)), the Markdown page the README's
commands table links to, rendered after the --help sections (a `## Description` section of
it joins the DESCRIPTION); docs/man/NAME.SECTION.md adds sections to the pages without one
(pfi(1), pfid.conf(5)). Markdown read: `## ` and `### ` headings, paragraphs, `- ` items,
``` blocks, tables, **bold**, *italic*, `code`, [links](...), <!-- comments -->.

    manpages.py --docs [--check] PFI PFID SOURCE_DIR

rewrites (--check: compares) the generated block of every docs/commands page: the command's
--help between `<!-- BEGIN generated` and `<!-- END generated -->`, so page, man page and
--help cannot drift (tests/man.sh runs --check).
"""
import datetime
import os
import re
import subprocess
import sys

OPT_LINE = re.compile(r"^( {1,6})(-\S.*?)(?: {2,}(\S.*))?$")
VERSION_RE = re.compile(r"^project\(pfi VERSION ([0-9.]+)", re.M)


def run_help(argv):
    out = subprocess.run(argv + ["--help"], capture_output=True, text=True, check=True)
    return out.stdout


def esc(text):
    """Roff-escape running text: backslashes, hyphens of options, a leading dot."""
    text = text.replace("\\", "\\e")
    text = re.sub(r"(?<![\w])-", r"\\-", text)
    text = text.replace("|", "|\\:")  # a break point: 'auto|a|b|...' fits a line
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def parse_help(text):
    """--help text -> (synopsis lines, [(kind, payload)]) where kind is 'para' (lines),
    'pre' (lines), 'heading' (str), 'opt' ((spec, [desc lines])), 'exit' (lines)."""
    lines = text.rstrip("\n").split("\n")
    synopsis = []
    i = 0
    while i < len(lines) and lines[i].strip():
        raw = lines[i]
        s = re.sub(r"^[Uu]sage: *", "", raw.strip())
        if not synopsis or s.startswith(("pfi ", "pfid ", "pfi\t")) or s in ("pfi", "pfid"):
            synopsis.append(s)
        elif raw.startswith(" "):
            synopsis[-1] += " " + s
        else:
            break  # no blank line between the usage and the description (pfid)
        i += 1
    blocks = []
    para = []
    # where descriptions start: the commonest column of the option lines' descriptions
    cols = [len(l) - len(m.group(3)) for l in lines for m in [OPT_LINE.match(l)] if m and m.group(3)]
    col_desc = max(set(cols), key=cols.count) if cols else None

    def flush():
        if para:
            cut = next((k for k, p in enumerate(para)
                        if re.match(r"^(.*[.:] +)?Exit (codes|status):", p)), None)
            if cut is not None:
                m = re.match(r"^(.*[.:]) +(Exit (codes|status):.*)$", para[cut])
                head = para[:cut] + ([m.group(1)] if m else [])
                tail = [m.group(2) if m else para[cut]] + para[cut + 1:]
                if head:
                    blocks.append(("para", head))
                blocks.append(("exit", tail))
            else:
                blocks.append(("para", list(para)))
            para.clear()

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
            i += 1
            continue
        m = OPT_LINE.match(line)
        if m:
            flush()
            spec, desc = m.group(2), m.group(3)
            if desc is None and col_desc and len(line) > col_desc and line[col_desc - 1] == " " \
                    and line[col_desc] != " " and not re.search(r"--[a-z]", line[col_desc:]):
                # a spec as long as its column: one blank before the description
                spec, desc = line[:col_desc].strip(), line[col_desc:].strip()
            descs = [desc] if desc else []
            col = line.find(desc) if desc else None
            i += 1
            while i < len(lines) and lines[i].strip():
                nxt = lines[i]
                indent = len(nxt) - len(nxt.lstrip())
                if OPT_LINE.match(nxt) and indent <= 4:
                    break
                if col is None:
                    col = indent
                if indent < min(col, 8):
                    break
                descs.append(nxt.strip())
                i += 1
            blocks.append(("opt", (spec.strip(), descs)))
            continue
        if line.startswith(" "):
            flush()
            pre = []
            while i < len(lines) and lines[i].startswith(" ") and not OPT_LINE.match(lines[i]):
                pre.append(lines[i])
                i += 1
            blocks.append(("pre", pre))
            continue
        if re.match(r"^[A-Za-z][\w ,()/-]*:$", line.strip()) and not para:
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if OPT_LINE.match(nxt):
                blocks.append(("heading", line.strip().rstrip(":")))
                i += 1
                continue
        para.append(line.strip())
        i += 1
    flush()
    return synopsis, blocks


def options_of(text):
    """Every option a --help text defines (the first column of its option lines)."""
    found = set()
    for _, blocks in [parse_help(text)]:
        for kind, payload in blocks:
            if kind == "opt":
                for tok in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", payload[0]):
                    found.add(tok)
    return found


def inline(text):
    """Escaped running text of Markdown: `code` and **bold** in bold, *italic* in italic,
    [text](target) as its text."""
    out = []
    for k, part in enumerate(re.split(r"(`[^`]+`)", text)):
        if k % 2:
            out.append("\\fB" + esc(part[1:-1]) + "\\fR")
            continue
        part = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", part)
        part = esc(part)
        part = re.sub(r"\*\*(.+?)\*\*", r"\\fB\1\\fR", part)
        part = re.sub(r"(?<![\w*])\*(?!\s)([^*]+?)(?<!\s)\*(?![\w*])", r"\\fI\1\\fR", part)
        out.append(part)
    text = "".join(out)
    return "\\&" + text if text.startswith(("\\fB.", "\\fI.")) else text


def md_table(rows):
    """Markdown table rows -> roff: each row a tagged paragraph (its first cell the tag, the
    others 'header: cell'), which reads well in a terminal at any width."""
    cells = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", r.strip().strip("|"))]
             for r in rows]
    head, body = cells[0], [c for c in cells[2:]]
    out = []
    for row in body:
        out.append(".TP")
        out.append(inline(row[0]) if row[0] else "\\&")
        rest = ["%s: %s" % (head[k], row[k]) if head[k] else row[k]
                for k in range(1, min(len(row), len(head))) if row[k]]
        if len(head) == 2 and len(rest) == 1:
            rest = [row[1]]
        out.append(inline("; ".join(rest)) if rest else "\\&")
    return out


def render_extra(path):
    """A Markdown manual (docs/commands/*.md, docs/man/*.md) as roff: '## ' sections,
    '### ' subsections, paragraphs, '- ' items (continued by indented lines), ``` blocks,
    tables; the page title ('# '), comments and the generated --help block are left out."""
    out = []
    if not path or not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    para = []

    def flush():
        if para:
            out.append(".PP")
            out.append(inline(" ".join(para)))
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("<!-- BEGIN generated"):
            while i < len(lines) and not lines[i].startswith("<!-- END generated"):
                i += 1
            i += 1
            continue
        if line.lstrip().startswith("<!--"):
            flush()
            while i < len(lines) and "-->" not in lines[i]:
                i += 1
            i += 1
            continue
        if line.lstrip().startswith("```"):
            flush()
            indent = len(line) - len(line.lstrip())
            out.append(".PP")
            out.append(".EX")
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith("```"):
                text = lines[i][indent:] if not lines[i][:indent].strip() else lines[i].lstrip()
                out.append(esc(text) if text else "")
                i += 1
            out.append(".EE")
        elif line.startswith("# "):
            flush()
        elif line.startswith("## "):
            flush()
            out.append(".SH " + esc(line[3:].strip().replace("`", "").upper()))
        elif line.startswith("### "):
            flush()
            out.append(".SS " + inline(line[4:].strip()))
        elif line.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            out.extend(md_table(rows))
            continue
        elif re.match(r"^(- |[0-9]+\. )", line):
            flush()
            item = [re.sub(r"^(- |[0-9]+\. )", "", line).strip()]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip() \
                    and not lines[i].lstrip().startswith("```"):
                item.append(lines[i].strip())
                i += 1
            out.append(".IP \\(bu 2")
            out.append(inline(" ".join(item)))
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return out


def header(name, section, summary, version, date):
    title = name.upper()
    manual = "System Administration" if section == "8" else (
        "File Formats" if section == "5" else "User Commands")
    return ['.\\" Generated by scripts/manpages.py from --help; edit the program or docs/man.',
            '.TH "%s" "%s" "%s" "pfi %s" "%s"' % (title, section, date, version, manual),
            # ragged right: option values such as auto|a|b|... break at '|' into lines
            # without a space, which a justified line cannot adjust (troff warns)
            ".ad l",
            ".SH NAME", "%s \\- %s" % (esc(name), esc(summary))]


def render_blocks(blocks):
    out = []
    in_options = False
    exit_lines = []
    for kind, payload in blocks:
        if kind == "exit":
            exit_lines = payload
            continue
        if kind in ("opt", "heading") and not in_options:
            out.append(".SH OPTIONS")
            in_options = True
        if kind == "heading":
            out.append(".SS " + esc(payload[0].upper() + payload[1:]))
        elif kind == "opt":
            spec, descs = payload
            out.append(".TP")
            out.append("\\fB" + esc(spec) + "\\fR")
            out.extend(esc(d) for d in descs) if descs else out.append("\\&")
        elif kind == "para":
            out.append(".PP")
            out.extend(esc(p) for p in payload)
        elif kind == "pre":
            out.append(".PP")
            out.append(".nf")
            out.extend(esc(p.rstrip()) for p in payload)
            out.append(".fi")
    if exit_lines:
        text = " ".join(exit_lines)
        text = re.sub(r"^Exit (codes|status): *", "", text)
        out.append(".SH EXIT STATUS")
        out.append(esc(text))
    return out


def merge_sections(out, extra):
    """out with the sections of extra appended; a section of extra whose title out has
    already (DESCRIPTION, OPTIONS, EXIT STATUS) joins the end of that section."""
    def starts(lines):
        return [k for k, line in enumerate(lines) if line.startswith(".SH ")]
    lead = starts(extra)[0] if starts(extra) else len(extra)
    out = out + extra[:lead]
    cuts = starts(extra) + [len(extra)]
    for a, b in zip(cuts, cuts[1:]):
        sec = extra[a:b]
        have = [k for k in starts(out) if out[k] == sec[0]]
        if have:
            end = next((k for k in starts(out) if k > have[0]), len(out))
            out = out[:end] + sec[1:] + out[end:]
        else:
            out = out + sec
    return out


def page(name, section, summary, help_text, version, date, extra_path, see_also):
    synopsis, blocks = parse_help(help_text)
    out = header(name, section, summary, version, date)
    out.append(".SH SYNOPSIS")
    for k, s in enumerate(synopsis):
        if k:
            out.append(".br")
        out.append(esc(s))
    # the description: the paragraphs before the first option
    first_opt = next((k for k, b in enumerate(blocks) if b[0] in ("opt", "heading")), len(blocks))
    out.append(".SH DESCRIPTION")
    out.extend(render_blocks(blocks[:first_opt]))
    out.extend(render_blocks(blocks[first_opt:]))
    extra = render_extra(extra_path)
    out = merge_sections(out, extra)
    if see_also and not any(line == ".SH SEE ALSO" for line in extra):
        out.append(".SH SEE ALSO")
        out.append(",\n".join("\\fB%s\\fR(%s)" % (esc(n), s) for n, s in see_also))
    return "\n".join(out) + "\n"


def verbs_of(top_help):
    verbs = []
    in_cmds = False
    for line in top_help.split("\n"):
        if line.strip() == "commands:":
            in_cmds = True
            continue
        if in_cmds:
            m = re.match(r"^  (\w+) +(.*)$", line)
            if not m:
                break
            if m.group(1) not in ("help", "version"):
                verbs.append((m.group(1), m.group(2)))
    return verbs


def conf_keys(path):
    """examples/pfid.conf -> [(section, key, default or None, comment)]."""
    keys = []
    section = ""
    prose = []  # comment lines above a key (its description when the line has none)
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^# -+ (.+?) -+$", line)
            if m:
                section = m.group(1)
                prose = []
                continue
            m = re.match(r"^(#\s*)?([a-z_]+) = (.*?)(?:\s+#\s*(.*))?$", line)
            if m and section:
                commented = m.group(1) is not None
                keys.append((section, m.group(2), None if commented else m.group(3).strip(),
                             m.group(3).strip() if commented else "",
                             m.group(4) or " ".join(prose)))
                prose = []
            elif line.startswith("#") and section:
                prose.append(line.lstrip("#").strip())
            else:
                prose = []
    return keys


def conf_page(src, version, date):
    out = header("pfid.conf", "5", "configuration of pfid, the pfi node agent", version, date)
    out += [".SH SYNOPSIS", "/etc/pfid/pfid.conf", ".SH DESCRIPTION",
            "The file \\fBpfid\\fR(8) reads at start and on SIGHUP (\\fB\\-\\-config\\fR names "
            "another). One \\fIkey\\fR = \\fIvalue\\fR a line; a line starting with # is a "
            "comment. Durations take ms, s, m or h; sizes k or M. Every key can be given on "
            "the command line too: \\fBpfid \\-\\-set\\fR \\fIkey\\fR=\\fIvalue\\fR.",
            ".PP",
            "The keys below, their defaults and what they mean are those of the shipped "
            "default configuration (examples/pfid.conf, installed as /etc/pfid/pfid.conf by "
            "the pfid package)."]
    section = None
    for sec, key, default, example, comment in conf_keys(os.path.join(src, "examples", "pfid.conf")):
        if sec != section:
            out.append(".SH " + esc(sec.upper()) + " KEYS")
            section = sec
        out.append(".TP")
        if default is not None:
            out.append("\\fB%s\\fR = \\fI%s\\fR" % (esc(key), esc(default)))
        else:
            out.append("\\fB%s\\fR (unset; e.g. \\fI%s\\fR)" % (esc(key), esc(example)))
        out.append(esc(comment) if comment else "\\&")
    out.extend(render_extra(os.path.join(src, "docs", "man", "pfid.conf.5.md")))
    out += [".SH SEE ALSO", "\\fBpfid\\fR(8), \\fBpfi\\-control\\fR(1)"]
    return "\n".join(out) + "\n"


def completion(prog, verbs, verb_opts, top_opts):
    """A bash completion function for prog: verbs first (pfi), then the verb's options."""
    fn = "_" + prog.replace("-", "_")
    out = ["# bash completion for %s (generated by scripts/manpages.py from --help)" % prog,
           "%s()" % fn, "{", "    local cur=${COMP_WORDS[COMP_CWORD]} verb=\"\" w",
           "    COMPREPLY=()"]
    if verbs:
        out += ["    for w in \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"; do",
                "        case $w in -*) ;; *) verb=$w; break ;; esac",
                "    done",
                "    if [ -z \"$verb\" ]; then",
                "        if [[ $cur == -* ]]; then",
                "            COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))" % " ".join(sorted(top_opts)),
                "        else",
                "            COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))" % " ".join(
                    [v for v, _ in verbs] + ["help", "version"]),
                "        fi",
                "        return 0",
                "    fi",
                "    local opts=\"\"",
                "    case $verb in"]
        for v, _ in verbs:
            out.append("    %s) opts=\"%s\" ;;" % (v, " ".join(sorted(verb_opts[v]))))
        out.append("    help) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return 0 ;;"
                   % " ".join(v for v, _ in verbs))
        out.append("    esac")
    else:
        out.append("    local opts=\"%s\"" % " ".join(sorted(top_opts)))
    out += ["    if [[ $cur == -* ]]; then",
            "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))",
            "    else",
            "        COMPREPLY=($(compgen -f -- \"$cur\"))",
            "    fi",
            "    return 0",
            "}",
            "complete -o filenames -o bashdefault -F %s %s" % (fn, prog)]
    return "\n".join(out) + "\n"


def tidy(text):
    """No paragraph macro right after a heading or another paragraph macro (mandoc -Tlint)."""
    out = []
    for line in text.split("\n"):
        if line == ".PP" and out and (out[-1].startswith((".SH", ".SS")) or out[-1] == ".PP"):
            continue
        out.append(line)
    return "\n".join(out)


def write(path, text):
    if "/man" in path:
        text = tidy(text)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def manual(src, name, section):
    """The Markdown manual of a page: docs/commands/NAME.md, else docs/man/NAME.SECTION.md."""
    path = os.path.join(src, "docs", "commands", name + ".md")
    return path if os.path.exists(path) else os.path.join(src, "docs", "man",
                                                          "%s.%s.md" % (name, section))


GEN_BEGIN = "<!-- BEGIN generated from `%s --help` by scripts/manpages.py --docs: do not edit -->"
GEN_END = "<!-- END generated -->"


def help_block(cmd, text):
    return [GEN_BEGIN % cmd, "## Synopsis and options", "",
            "`%s --help` prints (the man page's SYNOPSIS, DESCRIPTION, OPTIONS and EXIT STATUS"
            " are made from it):" % cmd, "", "```text"] + text.rstrip("\n").split("\n") + [
            "```", GEN_END]


def docs(argv):
    """--docs [--check] PFI PFID SRC: the --help block of every docs/commands page."""
    check = argv[:1] == ["--check"]
    if check:
        argv = argv[1:]
    if len(argv) != 3:
        sys.exit("usage: manpages.py --docs [--check] PFI PFID SOURCE_DIR")
    pfi, pfid, src = argv
    pages = [("pfi " + v, "pfi-" + v, [pfi, v]) for v, _ in verbs_of(run_help([pfi]))]
    pages.append(("pfid", "pfid", [pfid]))
    bad = 0
    for cmd, name, argv_help in pages:
        path = os.path.join(src, "docs", "commands", name + ".md")
        if not os.path.exists(path):
            print("docs: no page %s for `%s`" % (os.path.relpath(path, src), cmd))
            bad += 1
            continue
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        want = help_block(cmd, run_help(argv_help))
        begin = next((k for k, l in enumerate(lines) if l.startswith("<!-- BEGIN generated")), None)
        end = next((k for k, l in enumerate(lines) if l == GEN_END), None)
        if begin is None or end is None or end < begin:
            print("docs: %s has no generated --help block (%s ... %s)" % (path, GEN_BEGIN % cmd,
                                                                          GEN_END))
            bad += 1
            continue
        if lines[begin:end + 1] == want:
            continue
        if check:
            print("docs: %s: the --help block differs from `%s --help`; run "
                  "scripts/manpages.py --docs PFI PFID SOURCE_DIR" % (os.path.relpath(path, src), cmd))
            bad += 1
        else:
            write(path, "\n".join(lines[:begin] + want + lines[end + 1:]))
            print("docs: %s updated" % os.path.relpath(path, src))
    return 1 if bad else 0


def main():
    if sys.argv[1:2] == ["--docs"]:
        sys.exit(docs(sys.argv[2:]))
    if len(sys.argv) != 5:
        sys.exit("usage: manpages.py PFI PFID SOURCE_DIR OUT_DIR\n"
                 "       manpages.py --docs [--check] PFI PFID SOURCE_DIR")
    pfi, pfid, src, out = sys.argv[1:]
    with open(os.path.join(src, "CMakeLists.txt"), encoding="utf-8") as f:
        version = VERSION_RE.search(f.read()).group(1)
    # the date of the source, not of the build (reproducible): SOURCE_DATE_EPOCH when set
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0")) or int(
        os.path.getmtime(os.path.join(src, "CMakeLists.txt")))
    date = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%d")
    man = os.path.join(src, "docs", "man")
    top = run_help([pfi])
    verbs = verbs_of(top)
    see = [("pfi-" + v, "1") for v, _ in verbs]
    write(os.path.join(out, "man1", "pfi.1"),
          page("pfi", "1", "the Power Flexibility Index toolkit", top, version, date,
               os.path.join(man, "pfi.1.md"), see + [("pfid", "8")]))
    verb_opts = {}
    for v, summary in verbs:
        text = run_help([pfi, v])
        # the option lines' long options and the synopsis's (pfi report has only those)
        synopsis = "\n".join(text.split("\n\n", 1)[:1])
        verb_opts[v] = {o for o in options_of(text) | set(
            re.findall(r"(?<![\w-])(--[A-Za-z][\w-]*)", synopsis)) if o.startswith("--")}
        write(os.path.join(out, "man1", "pfi-%s.1" % v),
              page("pfi-" + v, "1", summary, text, version, date,
                   manual(src, "pfi-" + v, "1"), [("pfi", "1")]))
    ptext = run_help([pfid])
    write(os.path.join(out, "man8", "pfid.8"),
          page("pfid", "8", "the pfi node agent: GPU telemetry and power-cap API", ptext, version,
               date, manual(src, "pfid", "8"),
               [("pfid.conf", "5"), ("pfi-control", "1"), ("pfi", "1")]))
    write(os.path.join(out, "man5", "pfid.conf.5"), conf_page(src, version, date))
    write(os.path.join(out, "completions", "pfi"),
          completion("pfi", verbs, verb_opts, {"--help", "-h", "--version"}))
    write(os.path.join(out, "completions", "pfid"), completion("pfid", [], {}, {o for o in options_of(ptext) if o.startswith("--")}))


if __name__ == "__main__":
    main()
