#!/usr/bin/env bash
# bench/alloc_diff.sh — hold a change to the allocator to the build before it, bit for bit.
#
# usage: bench/alloc_diff.sh OLD_BUILD [NEW_BUILD]     (NEW_BUILD default: build)
#
# Each build directory needs libpfi.a and pfi (e.g. main's build and this one). Two checks:
#  1. the library: bench/alloc_diff.c linked with each libpfi.a prints every number of
#     pfi_allocate and pfi_allocate_tree (oracle, equal, fair-headroom) in hexadecimal on
#     random instances (ties on purpose, depth 1-4 trees, reserve/measured/mixed limits,
#     bands, cap steps, infeasible levels); the two outputs must be equal byte for byte;
#  2. the command: random jobs files (ties: repeated jobs and curves of small integers;
#     bands, nodes, a topology) through both `pfi allocate`s, table/csv/json, --explain,
#     strategies, reductions, --budget-kind reserve, --cap-step; outputs equal byte for byte.
# env: ALLOC_DIFF_SEEDS (library seeds, default "1 2 3"), ALLOC_DIFF_COUNT (instances per
# seed, 1500), ALLOC_DIFF_FILES (jobs files, 6), PYTHON (/usr/bin/python3);
# ALLOC_DIFF_TOL: compare number by number within this relative tolerance instead of byte
# for byte (bench/alloc_diff_tol.py; for a change that may move the last bits, e.g. the tree
# oracle's flat-first path, which sums the budget in another order than the greedy).
# Exit 0: identical (or within ALLOC_DIFF_TOL); 1: a difference (the first lines of it are
# printed); 2: bad usage.
set -u -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
[ $# -ge 1 ] && [ $# -le 2 ] || { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
old=$1 new=${2:-$root/build}
for b in "$old" "$new"; do
    [ -f "$b/libpfi.a" ] && [ -x "$b/pfi" ] || { echo "alloc_diff: $b: no libpfi.a or pfi" >&2; exit 2; }
done
python=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/alloc-diff.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
libs="-lgsl -lgslcblas -ljansson -lsqlite3 -lpcre2-8 -lcsv -lm -ldl -lpthread"
for side in old new; do
    b=$old; [ $side = new ] && b=$new
    # shellcheck disable=SC2086
    cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$root/include" -o "$tmp/diff_$side" \
        "$here/alloc_diff.c" "$b/libpfi.a" $libs || { echo "alloc_diff: cannot build against $b" >&2; exit 2; }
done
status=0
for seed in ${ALLOC_DIFF_SEEDS:-1 2 3}; do
    "$tmp/diff_old" "$seed" "${ALLOC_DIFF_COUNT:-1500}" >"$tmp/lib_old.txt" || exit 1
    "$tmp/diff_new" "$seed" "${ALLOC_DIFF_COUNT:-1500}" >"$tmp/lib_new.txt" || exit 1
    if cmp -s "$tmp/lib_old.txt" "$tmp/lib_new.txt"; then
        echo "library, seed $seed: $(grep -c '^case' "$tmp/lib_new.txt") results identical"
    elif [ -n "${ALLOC_DIFF_TOL:-}" ] &&
        r=$("$python" "$here/alloc_diff_tol.py" "$tmp/lib_old.txt" "$tmp/lib_new.txt" "$ALLOC_DIFF_TOL"); then
        echo "library, seed $seed: $(grep -c '^case' "$tmp/lib_new.txt") results within $ALLOC_DIFF_TOL: $r"
    else
        echo "library, seed $seed: DIFFERENT"; diff "$tmp/lib_old.txt" "$tmp/lib_new.txt" | head -20
        status=1
    fi
done
# the command on random jobs files
"$python" - "$tmp" "${ALLOC_DIFF_FILES:-6}" <<'PY'
import random, sys
tmp, files = sys.argv[1], int(sys.argv[2])
for f in range(files):
    rnd = random.Random(100 + f)
    n = [50, 400, 3000, 20000, 120, 7][f % 6]
    racks = ["r%d" % i for i in range(8)]
    with open("%s/jobs%d.csv" % (tmp, f), "w") as o:
        o.write("job,class,gpus,cap_w,power_w,tput_tok_s,band,node\n")
        prev, top = None, {}
        for j in range(n):
            g = rnd.randint(1, 8)
            k = rnd.randint(2, 7)
            ints = rnd.random() < 0.4
            if prev is not None and rnd.random() < 0.2:
                pts, g = prev  # the job before again: ties
            else:
                pts, p, t = [], 0.0, 0.0
                dp, dt = (rnd.randint(1, 3) * 10.0, rnd.randint(1, 4) * 10.0) if ints else \
                         (40 + 60 * rnd.random(), 500 + 1500 * rnd.random())
                for i in range(k):
                    p += (100.0 if ints else 100 + 500 * rnd.random()) if i == 0 else dp
                    t += (50.0 if ints else 1000 * rnd.random()) if i == 0 else dt
                    pts.append((200 + 50 * i, round(g * p, 3), round(t, 3)))
                    if not ints:
                        dp *= 1 + 0.3 * rnd.random()
                        dt *= 0.3 + 0.7 * rnd.random()
                    elif dt > 10:
                        dt -= 10
            prev = (pts, g)
            band = rnd.choice(["", "", "1", "2", "3"]) if f % 3 == 0 else ""
            node = rnd.choice(racks + [""])
            top[node] = top.get(node, 0) + pts[-1][1]
            for i, (c, p, t) in enumerate(pts):
                o.write("j%d,%s,%d,%d,%s,%s,%s,%s\n" % (j, rnd.choice(["dense", "moe-ft"]) if i == 0 else "",
                        g, c, p, t, band if i == 0 else "", node if i == 0 else ""))
    # limits from each level's top draw: racks 40-100 %, PDUs 60-95 %, the feed 85 %
    rack = {r: top.get(r, 0) * rnd.uniform(0.4, 1.0) + 1 for r in racks}
    pdu = [sum(top.get(r, 0) for i, r in enumerate(racks) if i % 2 == q) for q in range(2)]
    with open("%s/topo%d.txt" % (tmp, f), "w") as t:
        t.write("feed site - %.1f measured\n" % (0.85 * sum(top.values()) + 1))
        for q in range(2):
            t.write("pdu pdu%d site %.1f %s\n" % (q, pdu[q] * rnd.uniform(0.6, 0.95) + 1,
                                                 "reserve" if f % 2 else "measured"))
        for i, r in enumerate(racks):
            t.write("rack %s pdu%d %.1f\n" % (r, i % 2, rack[r]))
PY
[ $? -eq 0 ] || exit 1
runs=0
for ((f = 0; f < ${ALLOC_DIFF_FILES:-6}; f++)); do
    for opts in "--format csv" "--format json" "--format table --explain" \
        "--format csv --reduction 0.5" "--format csv --strategy equal" \
        "--format csv --strategy fair-headroom" "--format csv --budget-kind reserve" \
        "--format csv --cap-step 25" "--format csv --topology $tmp/topo$f.txt" \
        "--format json --topology $tmp/topo$f.txt --reduction 0.1" \
        "--format table --explain --topology $tmp/topo$f.txt" \
        "--format csv --topology $tmp/topo$f.txt --strategy equal"; do
        # shellcheck disable=SC2086
        "$old/pfi" allocate $opts "$tmp/jobs$f.csv" >"$tmp/o.txt" 2>&1; ro=$?
        # shellcheck disable=SC2086
        "$new/pfi" allocate $opts "$tmp/jobs$f.csv" >"$tmp/n.txt" 2>&1; rn=$?
        runs=$((runs + 1))
        if [ $ro = $rn ] && [ -n "${ALLOC_DIFF_TOL:-}" ] && ! cmp -s "$tmp/o.txt" "$tmp/n.txt" &&
            r=$("$python" "$here/alloc_diff_tol.py" "$tmp/o.txt" "$tmp/n.txt" "$ALLOC_DIFF_TOL"); then
            echo "command: jobs$f.csv $opts: within $ALLOC_DIFF_TOL: $r"
        elif [ $ro != $rn ] || ! cmp -s "$tmp/o.txt" "$tmp/n.txt"; then
            echo "command: jobs$f.csv $opts: DIFFERENT (exit $ro / $rn)"; diff "$tmp/o.txt" "$tmp/n.txt" | head -10
            status=1
        fi
    done
done
echo "command: $runs runs compared$([ $status = 0 ] && echo ', identical or within the tolerance')"
exit $status
