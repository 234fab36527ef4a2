#!/bin/sh
# End-to-end: pfi sweep on the emulated backend into the SQLite run store (--db), resumed
# from the store, read back by pfi analyze --db; --record writes a replay CSV that the replay
# backend plays. The sweep's PFI must match the DESIGN §7 model's own PFI of the emulated job.
# Usage: sweep_store.sh PFI_BINARY
set -u
PFI=$1
T=$(mktemp -d /tmp/pfi-cli-sweep-store.XXXXXX)
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
expect() { # expect NAME WANT GOT
    if [ "$3" -eq "$2" ]; then ok "$1 (exit $3)"; else bad "$1: exit $3, want $2"; cat "$T/err"; fi
}
# field N of the first data line of a CSV on stdin
field() { awk -F, -v n="$1" 'NR == 2 { print $n; exit }'; }

SPEC=gpus=4,alpha=0.6,spread=0,seed=7
CAPS=700,600,500,400,300,200
sweep() { # sweep CAPS [extra options...]
    c=$1; shift
    "$PFI" sweep --backend emulated --emulate "$SPEC" --caps "$c" --duration 30m --interval 5s \
        --warmup 5m --group job-a "$@"
}

# the model's own PFI of the emulated job (pfi_model_pfi, DESIGN §7): alpha 0.6, P_u 650 W,
# P_s 162.5 W, gamma 2, x_min 0.02
model=$(awk 'BEGIN { a = 0.6; pu = 650; ps = 162.5; n = split("600,500,400,300,200", c, ",");
    for (i = 1; i <= n; i++) { r = sqrt((c[i] - ps) / (pu - ps));
        x = 1 - (ps + (pu - ps) * r * r) / pu; y = 1 - 1 / (a / r + 1 - a); s += x / y }
    printf "%.6f", s / n }')

# 1. part of the sweep into a new store
sweep 700,500 --db "$T/pfi.db" --format csv >"$T/out" 2>"$T/err"; expect "sweep --db" 0 $?
grep -q '2 run(s) measured, 0 already' "$T/err" && ok "two runs stored" || bad "first sweep: $(cat "$T/err")"

# 2. the whole sweep again: resumes from the store, records raw samples
sweep $CAPS --db "$T/pfi.db" --record "$T/rec.csv" --format csv >"$T/out" 2>"$T/err"
expect "sweep --db resumes" 0 $?
grep -q '4 run(s) measured, 2 already in '"$T/pfi.db" "$T/err" && ok "resume from the store skips the stored caps" \
    || bad "resume: $(cat "$T/err")"
sweep_pfi=$(field 3 <"$T/out")
sweep_lo=$(field 4 <"$T/out")
sweep_hi=$(field 5 <"$T/out")
[ "$(field 2 <"$T/out")" = 6 ] && ok "the PFI table counts all six runs" || bad "runs in table: $(cat "$T/out")"

# 3. pfi analyze --db shows the sweep's PFI
"$PFI" analyze --db "$T/pfi.db" --format csv >"$T/an" 2>"$T/err"; expect "analyze --db" 0 $?
an_pfi=$(field 7 <"$T/an")
an_lo=$(field 8 <"$T/an")
an_hi=$(field 10 <"$T/an")
[ "$(field 2 <"$T/an")" = job-a ] && ok "analyze --db lists the sweep group" || bad "analyze group: $(cat "$T/an")"
awk -v a="$an_pfi" -v b="$sweep_pfi" 'BEGIN { exit !(a > 0 && (a - b < 1e-4 * b) && (b - a < 1e-4 * b)) }' \
    && ok "analyze --db PFI $an_pfi equals the sweep's $sweep_pfi" || bad "analyze PFI $an_pfi vs sweep $sweep_pfi"
# the CI is the same computation (the group's own Monte Carlo stream in both; the sweep drew
# stream 0, 1... and its interval differed from analyze's in the third digit)
awk -v a="$an_lo" -v b="$sweep_lo" -v c="$an_hi" -v d="$sweep_hi" \
    'BEGIN { exit !(a > 0 && c > a && (a - b) ^ 2 < (1e-5 * a) ^ 2 && (c - d) ^ 2 < (1e-5 * c) ^ 2) }' \
    && ok "analyze --db CI [$an_lo, $an_hi] equals the sweep's [$sweep_lo, $sweep_hi]" \
    || bad "analyze CI [$an_lo, $an_hi] vs sweep [$sweep_lo, $sweep_hi]"
awk -v m="$model" -v p="$an_pfi" -v lo="$an_lo" -v hi="$an_hi" \
    'BEGIN { exit !(lo - 0.02 * m <= m && m <= hi + 0.02 * m && (p - m) * (p - m) < (0.03 * m) ^ 2) }' \
    && ok "stored PFI $an_pfi [$an_lo, $an_hi] matches the model's $model" \
    || bad "stored PFI $an_pfi [$an_lo, $an_hi], model $model"

# 4. the same sweep a third time measures nothing and still prints the table
sweep $CAPS --db "$T/pfi.db" >"$T/out" 2>"$T/err"; expect "sweep --db, all done" 0 $?
grep -q '0 run(s) measured, 6 already' "$T/err" && grep -q job-a "$T/out" \
    && ok "nothing left to measure, table printed" || bad "third sweep: $(cat "$T/err")"

# 5. --record: a replay CSV with every sample of the four new windows (360 ticks x 4 GPUs)
[ "$(head -1 "$T/rec.csv")" = "t_s,gpu,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,gpu_util,mem_util,temp_c,dram_active,tensor_active,enforced_limit_w,clock_event_reasons" ] \
    && ok "record header" || bad "record header: $(head -1 "$T/rec.csv")"
[ "$(wc -l <"$T/rec.csv")" -eq $((4 * 360 * 4 + 1)) ] && ok "record holds every sample" \
    || bad "record rows: $(wc -l <"$T/rec.csv")"
awk -F, 'NR > 1 && $12 != "" { seen[$12 + 0] = 1 } END { exit !(seen[600] && seen[400] && seen[300] && seen[200] && !seen[700]) }' \
    "$T/rec.csv" && ok "record carries the limit in effect" || bad "record limits"
"$PFI" probe --backend replay --replay "$T/rec.csv" >"$T/out" 2>"$T/err"; expect "probe replays the record" 0 $?
grep -q 'replay: 4 GPU' "$T/out" && ok "replay sees four GPUs" || bad "replay: $(head -3 "$T/out")"

# 6. -o and --db together: both get every run; analyze agrees on both
sweep $CAPS --db "$T/both.db" -o "$T/dir" --format csv >"$T/out" 2>"$T/err"; expect "sweep -o --db" 0 $?
"$PFI" analyze "$T/dir" --format csv >"$T/a1" 2>"$T/err"; expect "analyze DIR" 0 $?
"$PFI" analyze --db "$T/both.db" --format csv >"$T/a2" 2>"$T/err"; expect "analyze --db (both)" 0 $?
# runs.csv rounds power to 0.1 mW and throughput to 6 digits; the store keeps doubles
awk -v a="$(field 7 <"$T/a1")" -v b="$(field 7 <"$T/a2")" 'BEGIN { exit !(a > 0 && (a - b) * (a - b) < (1e-4 * b) ^ 2) }' \
    && ok "directory and store give the same PFI" || bad "dir $(field 7 <"$T/a1") vs db $(field 7 <"$T/a2")"
rm -f "$T/both.db"
sweep $CAPS --db "$T/both.db" -o "$T/dir" >"$T/out" 2>"$T/err"; expect "sweep -o --db, store lost" 0 $?
grep -q '6 run(s) measured, 0 already' "$T/err" && ok "a run missing from either output is measured again" \
    || bad "tee resume: $(cat "$T/err")"
[ "$(grep -c '^job-a,' "$T/dir/runs.csv")" -eq 6 ] && ok "runs.csv keeps one row per cap" || bad "runs.csv rows"

# 7. usage errors
sweep $CAPS >"$T/out" 2>"$T/err"; expect "no output" 2 $?
sweep $CAPS --db "$T/x.db" --record - >"$T/out" 2>"$T/err"; expect "--record -" 2 $?
printf 'not a database\n' >"$T/bad.db"
sweep $CAPS --db "$T/bad.db" >"$T/out" 2>"$T/err"
rc=$?; [ $rc -ne 0 ] && grep -q 'bad.db' "$T/err" && ok "not a store: refused (exit $rc)" || bad "bad store: exit $rc"

# 8. a cap outside the device's range is refused before anything is written: no directory,
# store or record file, no summary, one line per refused cap naming the limit and the flag
sweep 700,800,500,150 -o "$T/over" --db "$T/over.db" --record "$T/over.csv" >"$T/out" 2>"$T/err"
expect "cap above the maximum refused" 2 $?
[ ! -e "$T/over" ] && [ ! -e "$T/over.db" ] && [ ! -e "$T/over.csv" ] \
    && ok "refused sweep: no directory, store or record created" \
    || bad "refused sweep left: $(ls -A "$T" | tr '\n' ' ')"
[ ! -s "$T/out" ] && ok "refused sweep: nothing on stdout" || bad "refused sweep printed: $(cat "$T/out")"
grep -q 'run(s) measured' "$T/err" && bad "refused sweep printed a summary: $(cat "$T/err")" \
    || ok "refused sweep: no summary"
grep -q -- "--caps: 800 W is above GPU 0's maximum power limit of 700 W" "$T/err" \
    && grep -q -- "--caps: 150 W is below GPU 0's minimum power limit of 200 W" "$T/err" \
    && grep -q -- '--clamp' "$T/err" && ok "refusal names each cap, the device's limit and --clamp" \
    || bad "refusal message: $(cat "$T/err")"
# a huge cap is above the maximum too (it said "1e+09 W is not a positive number")
sweep 1e9,600 -o "$T/huge" >"$T/out" 2>"$T/err"
expect "huge cap refused" 2 $?
grep -q -- "--caps: 1e+09 W is above GPU 0's maximum power limit of 700 W" "$T/err" \
    && ! grep -q "not a positive number" "$T/err" && ok "a huge cap is above the maximum" \
    || bad "huge cap message: $(cat "$T/err")"
# an existing sweep directory and store are left exactly as they were
(cd "$T" && ls -lA dir && cksum dir/* both.db) >"$T/before"
sweep 700,800 -o "$T/dir" --db "$T/both.db" >"$T/out" 2>"$T/err"
expect "cap above the maximum refused (existing outputs)" 2 $?
(cd "$T" && ls -lA dir && cksum dir/* both.db) >"$T/after"
cmp -s "$T/before" "$T/after" && ok "refused sweep leaves the existing outputs as they were" \
    || bad "refused sweep changed the outputs: $(diff "$T/before" "$T/after")"

rm -rf "$T"
exit $fail
