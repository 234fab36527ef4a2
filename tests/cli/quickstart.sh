#!/bin/sh
# The README's main command (scripts/quickstart.sh's analyze line) analyses the real LLM jobs
# first: its first groups are the Phoenix demonstration's sweeps, fine-tuning far more
# flexible than pre-training (ratio PFIs computed independently in
# data/emerald_phoenix_2025/PROVENANCE.md). Usage: quickstart.sh PFI_BINARY SOURCE_DIR
set -u
PFI=$1
SRC=$2
T=${TMPDIR:-/tmp}/pfi-quickstart.$$
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT
fail=0
line=$(grep '^\./build/pfi analyze' "$SRC/scripts/quickstart.sh")
[ -n "$line" ] || { echo "FAIL no analyze line in scripts/quickstart.sh"; exit 1; }
# The same command, with this build's binary, from the source tree, without the figure.
args=$(echo "$line" | sed -e 's|^\./build/pfi analyze||' -e 's|--plot [^ ]*||')
first_dir=$(echo "$args" | tr ' ' '\n' | grep '^data/' | head -n 1)
[ "$first_dir" = data/emerald_phoenix_2025 ] && echo "ok   llm-data-first" ||
    { echo "FAIL first dataset is '$first_dir', not data/emerald_phoenix_2025"; fail=1; }
# shellcheck disable=SC2086
(cd "$SRC" && "$PFI" analyze $args) >"$T/out" 2>"$T/err" || { echo "FAIL analyze exit $?"; cat "$T/err"; fail=1; }
head -n 1 "$T/out" | grep -q '^data/emerald_phoenix_2025/dvfs_sweep.csv$' && echo "ok   first-screen-file" ||
    { echo "FAIL first line"; head -n 3 "$T/out"; fail=1; }
# The first screen: 8 LLM groups, PFI to 3 decimals as in PROVENANCE.md.
pfi_of() { sed -n '2,10p' "$T/out" | awk -v g="$1" '$1 == g { print $3 }'; }
for pair in ft_llama_8b_dolly:2.657 ft_llama_8b_p3:2.084 infer_llama_8b:2.578 \
    pt_mpt_13b_lg:1.403 pt_mpt_13b_sm:1.404 pt_mpt_7b_fast:1.512; do
    g=${pair%%:*} want=${pair#*:}
    got=$(pfi_of "$g")
    [ "$got" = "$want" ] && echo "ok   pfi-$g" || { echo "FAIL $g: PFI '$got', expected $want"; fail=1; }
done
# Fine-tuning's smallest PFI exceeds pre-training's largest by more than 0.5.
ft_min=$(for g in ft_llama_8b_dolly ft_llama_8b_p3; do pfi_of $g; done | sort -n | head -n 1)
pt_max=$(for g in pt_mpt_13b_lg pt_mpt_13b_sm pt_mpt_7b_fast; do pfi_of $g; done | sort -n | tail -n 1)
if awk -v a="$ft_min" -v b="$pt_max" 'BEGIN { exit !(a != "" && b != "" && a - b > 0.5) }'; then
    echo "ok   ft-more-flexible-than-pt ($ft_min > $pt_max)"
else
    echo "FAIL fine-tuning $ft_min vs pre-training $pt_max"; fail=1
fi
# A group's CI is its own: the same in the quick start's command as with its dataset alone
# (the Monte Carlo stream comes from the group's identity, not its place among the inputs).
ci_of() { grep -F 'A40+bert-base-uncased+gpu0.csv  ' "$1" | awk '{ print $4, $5 }'; }
(cd "$SRC" && "$PFI" analyze --noise-rel 0.01 data/zeus_jit_profile) >"$T/alone" 2>"$T/err" ||
    { echo "FAIL analyze zeus_jit_profile alone: exit $?"; cat "$T/err"; fail=1; }
with=$(ci_of "$T/out") alone=$(ci_of "$T/alone")
[ -n "$with" ] && [ "$with" = "$alone" ] && echo "ok   ci-independent-of-other-inputs ($with)" ||
    { echo "FAIL A40 bert CI '$with' with the other datasets, '$alone' alone"; fail=1; }
# Zeus follows.
grep -q '^data/zeus_jit_profile/' "$T/out" && grep -q 'zeus_nsdi23_power' "$T/out" && echo "ok   zeus-after" ||
    { echo "FAIL Zeus datasets missing"; fail=1; }
exit $fail
