#!/bin/sh
# A real single-node Slurm starts under the test (tests/slurm/lib.sh) and runs a batch job
# with two of the four fake GPUs: the job sees SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES.
# Skipped (exit 77, with the reason) only where Slurm is not installed.
# Usage: smoke.sh SOURCE_DIR
set -u
SRC=$1
. "$SRC/tests/slurm/lib.sh"
if ! slurm_have; then
    echo "SKIP: Slurm (slurmctld, slurmd, munged, sbatch) is not installed; scripts/deps.sh installs it"
    exit 77
fi
SL=$(mktemp -d /tmp/pfi-slurm.XXXXXX)
trap 'slurm_stop; rm -rf "$SL"' EXIT INT TERM
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
slurm_start || exit 1
ok "munged, slurmctld and slurmd up; node $SL_HOST idle"
id=$(sbatch --parsable --gres=gpu:2 -o "$SL/out.%j" --wrap 'echo "gpus=$SLURM_JOB_GPUS cuda=$CUDA_VISIBLE_DEVICES"')
if [ -z "$id" ]; then
    bad "sbatch refused the job"
    exit 1
fi
if slurm_poll 60 sh -c "[ \"\$(scontrol show job $id | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')\" = COMPLETED ]"; then
    ok "job $id completed"
else
    bad "job $id did not complete in 60 s: $(scontrol show job "$id" | tr '\n' ' ')"
fi
if grep -q '^gpus=0,1 cuda=0,1$' "$SL/out.$id" 2>/dev/null; then
    ok "job $id got GPUs 0,1 (SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES)"
else
    bad "job $id output: $(cat "$SL/out.$id" 2>&1)"
fi
[ $fail -eq 0 ] && echo "all Slurm smoke checks passed"
exit $fail
