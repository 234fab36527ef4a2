#!/bin/bash
# The man pages and bash completion scripts/manpages.py made in BUILD/man: every page
# passes mandoc -Tlint (warnings included; man --warnings without mandoc); each command's
# page shows exactly the options its --help shows (long and short, from the rendered page's
# OPTIONS section); pfid.conf(5) documents every key pfid's config parser accepts
# (src/agent/config.c) and no other; `pfi <TAB>` offers every command and `pfi VERB --<TAB>`
# (and `pfid --<TAB>`) every option of its --help; every command has its docs/commands page
# whose generated --help block is what --help prints.
# Usage: man.sh PFI PFID BUILD_DIR SOURCE_DIR
set -u
pfi=$1 pfid=$2 build=$3 src=$4
man=$build/man
fail=0
bad() {
    echo "man: $*"
    fail=1
}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# the option column of --help's option lines / the page's .TP tags
spec() {
    grep -E "^ {1,$1}-" | sed -E 's/^ +//; s/  .*//'
}
# the options of a --help text or a rendered OPTIONS section, one a line, sorted
opts() {
    grep -oE '(^|[ ,[(|])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[ ,[(|]//' | sort -u
}
# a page as text, no hyphenation or justification, one paragraph a line
render() {
    if command -v mandoc > /dev/null 2>&1; then
        mandoc -Tascii -O width=1000 "$1" | col -b
    else
        MANWIDTH=1000 man --nh --nj -l "$1" 2> /dev/null | col -b
    fi
}
lint() {
    if command -v mandoc > /dev/null 2>&1; then
        mandoc -Tlint -W warning "$1" > "$tmp/lint" 2>&1 || { cat "$tmp/lint"; bad "mandoc -Tlint: $1"; }
        [ -s "$tmp/lint" ] && { cat "$tmp/lint"; bad "mandoc -Tlint warns on $1"; }
    else
        LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$1" 2>&1 > /dev/null | grep . &&
            bad "man --warnings: $1"
    fi
}

verbs=$("$pfi" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF {print $1}' |
    grep -vx 'help\|version')
[ -n "$verbs" ] || bad "pfi --help lists no commands"
pages=0 with_opts=0
for v in $verbs; do
    page=$man/man1/pfi-$v.1
    [ -f "$page" ] || { bad "no page pfi-$v(1)"; continue; }
    lint "$page"
    "$pfi" "$v" --help | spec 6 | opts > "$tmp/help"
    render "$page" | sed -n '/^OPTIONS/,/^[A-Z][A-Z ]*$/p' | spec 7 | opts > "$tmp/page"
    [ -s "$tmp/help" ] && with_opts=$((with_opts + 1))
    if ! cmp -s "$tmp/help" "$tmp/page"; then
        bad "pfi-$v(1) and pfi $v --help differ in options (< --help, > page):"
        diff "$tmp/help" "$tmp/page" | grep '^[<>]'
    fi
    grep -q "^pfi-$v" <(render "$page" | sed -n '/^NAME/,+1p' | sed 's/^ *//') ||
        bad "pfi-$v(1) has no NAME line"
    pages=$((pages + 1))
done
[ "$with_opts" -ge 12 ] || bad "only $with_opts commands' --help show option lines"
# pfid(8) against pfid --help
"$pfid" --help | spec 6 | opts > "$tmp/help"
render "$man/man8/pfid.8" | sed -n '/^OPTIONS/,/^[A-Z][A-Z ]*$/p' | spec 7 | opts > "$tmp/page"
cmp -s "$tmp/help" "$tmp/page" || { bad "pfid(8) and pfid --help differ in options:"; diff "$tmp/help" "$tmp/page"; }
render "$man/man1/pfi.1" | grep -q -- '--version' || bad "pfi(1) does not show --version"
for p in "$man/man1/pfi.1" "$man/man8/pfid.8" "$man/man5/pfid.conf.5"; do
    [ -f "$p" ] || { bad "no page ${p##*/}"; continue; }
    lint "$p"
    pages=$((pages + 1))
done
# pfid.conf(5): the parser's keys (STR/DURATION/UINT table and the strcmp(key, ...) ones)
{
    grep -oE '(STR|DURATION|UINT)\("[a-z_]+"' "$src/src/agent/config.c" | sed 's/.*("//; s/"//'
    grep -oE 'strcmp\(key, "[a-z_]+"\)' "$src/src/agent/config.c" | sed 's/.*, "//; s/")//'
} | sort -u > "$tmp/keys"
render "$man/man5/pfid.conf.5" | grep -E '^ {7}[a-z_]+ (=|\(unset)' | awk '{print $1}' | sort -u > "$tmp/pagekeys"
[ "$(wc -l < "$tmp/keys")" -ge 20 ] || bad "found only $(wc -l < "$tmp/keys") keys in config.c"
cmp -s "$tmp/keys" "$tmp/pagekeys" || {
    bad "pfid.conf(5) and src/agent/config.c differ in keys (< parser, > page):"
    diff "$tmp/keys" "$tmp/pagekeys" | grep '^[<>]'
}

# bash completion: what <TAB> offers
complete_words() { # PROG WORD... (the last one is being completed)
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _${1}; [ ${#COMPREPLY[@]} = 0 ] || printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$man/completions/$1" "$@" | sort -u
}
bash -n "$man/completions/pfi" || bad "completions/pfi is not valid bash"
bash -n "$man/completions/pfid" || bad "completions/pfid is not valid bash"
printf '%s\n' $verbs help version | sort -u > "$tmp/want"
complete_words pfi "" > "$tmp/got"
cmp -s "$tmp/want" "$tmp/got" || { bad "pfi <TAB> offers:"; diff "$tmp/want" "$tmp/got"; }
for v in $verbs; do
    # the option lines' options and the synopsis's (pfi report has only the latter)
    { "$pfi" "$v" --help | spec 6 | opts; "$pfi" "$v" --help | sed '/^$/q' | opts; } |
        grep '^--' | sort -u > "$tmp/want"
    complete_words pfi "$v" -- > "$tmp/got"
    cmp -s "$tmp/want" "$tmp/got" || { bad "pfi $v --<TAB> differs from --help:"; diff "$tmp/want" "$tmp/got"; }
done
complete_words pfi ingest --tel > "$tmp/got"
[ "$(cat "$tmp/got")" = --telemetry ] || bad "pfi ingest --tel<TAB> gives '$(cat "$tmp/got")'"
"$pfid" --help | spec 6 | opts | grep '^--' > "$tmp/want"
complete_words pfid -- > "$tmp/got"
cmp -s "$tmp/want" "$tmp/got" || { bad "pfid --<TAB> differs from --help:"; diff "$tmp/want" "$tmp/got"; }

# docs/commands: a page per command, its --help block what --help prints now (the page is
# the rest of the man page, so page, man page and --help cannot drift)
python3 "$src/scripts/manpages.py" --docs --check "$pfi" "$pfid" "$src" ||
    bad "docs/commands pages out of date: python3 scripts/manpages.py --docs PFI PFID SOURCE_DIR"

[ "$fail" = 0 ] && echo "man: $pages pages lint-clean, options as in --help; completion of $(echo $verbs | wc -w) commands"
exit "$fail"
