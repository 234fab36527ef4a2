#!/bin/sh
# pfi predict refuses a model file whose numbers cannot come from pfi fit (negative sigma, a
# 1e308 coefficient, an xtx_inv with a negative diagonal or not symmetric, an inverted training
# range): exit 1 and an error naming the file and the field, never an inverted or 300-digit
# interval. A feature given twice or missing on the command line is a usage error (2). An
# estimate at or below 0 (PFI is a ratio of two positive reductions, DESIGN.md) is flagged.
# Usage: predict_model_check.sh PFI_BINARY
set -u
PFI=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
. "$(dirname "$0")/check.sh" # check, grep_out
check generate 0 "$PFI" library generate --quiet "$T/lib"
check fit 0 "$PFI" fit "$T/lib" -m "$T/model.json"
F='dcgm_dram_active*dcgm_mem_copy_util'
X='dcgm_dram_active=0.4 dcgm_mem_copy_util=0.3'
check good 0 "$PFI" predict -m "$T/model.json" $X
# edit NAME PYTHON-STATEMENT: a copy of the model with m changed
edit() {
    python3 - "$T/model.json" "$T/$1.json" "$2" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
F = m["features"][0]
exec(sys.argv[3])
json.dump(m, open(sys.argv[2], "w"))
PY
}
bad() { # bad NAME FIELD-PATTERN PYTHON-STATEMENT
    edit "$1" "$3"
    check "$1" 1 "$PFI" predict -m "$T/$1.json" $X
    grep_out "$1-file" "$1.json" "$T/err"
    grep_out "$1-field" "$2" "$T/err"
    if [ -s "$T/out" ]; then echo "FAIL $1: printed an estimate"; cat "$T/out"; fail=1; fi
}
bad negsigma "'sigma' is -1" 'm["sigma"] = -1'
bad bigcoef "coefficients.dcgm_dram_active.dcgm_mem_copy_util' is 1e+308" 'm["coefficients"][F] = 1e308'
bad bigintercept "coefficients.intercept" 'm["coefficients"]["intercept"] = -1e300'
bad negdiag "xtx_inv\[1\]\[1\]" 'm["xtx_inv"][1][1] = -abs(m["xtx_inv"][1][1])'
bad asym "not symmetric" 'm["xtx_inv"][0][1] = m["xtx_inv"][0][1] * 2 + 1'
bad range "training_range" 'm["training_range"][F] = [0.5, 0.1]'
bad df "'df'" 'm["df"] = m["n"]'
# the same feature twice: which value is meant? (the old code used the last, exit 0)
check dup 2 "$PFI" predict -m "$T/model.json" dcgm_dram_active=0.4 dcgm_dram_active=0.5 \
    dcgm_mem_copy_util=0.3
grep_out dup-msg "given twice" "$T/err"
# a model feature missing from the command line: a usage error, like an unknown one
check missing 2 "$PFI" predict -m "$T/model.json" dcgm_dram_active=0.4
# an estimate at or below 0: intercept -10 with the fitted slope on x = 0.12 gives
# -10 + slope * 0.12 < 0 whenever slope < 83 (the synthetic library's slope is about 5)
edit negest 'm["coefficients"]["intercept"] = -10.0; assert m["coefficients"][F] < 83'
check negest 0 "$PFI" predict -m "$T/negest.json" $X
grep_out negest-note "below PFI's physical range" "$T/out"
grep_out negest-warn "outside PFI's physical range" "$T/err"
exit $fail
