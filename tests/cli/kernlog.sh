#!/bin/sh
# pfi ingest --kernel-log end to end on case-03 (a GPU falls off the bus): the report, the
# flags, the exit codes, what is stored; bad input.
# Usage: kernlog.sh PFI_BINARY CASES_DIR
set -u
PFI=$1
C=$2/case-03
fail=0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
check() { # check NAME EXPECTED_EXIT COMMAND...
    name=$1; want=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL $name: exit $got, want $want"; cat "$T/out" "$T/err"; fail=1
    else
        echo "ok   $name"
    fi
}
has() { # has NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "ok   $1"; else echo "FAIL $1: '$2' not in $3"; cat "$3"; fail=1; fi
}
hasnt() { # hasnt NAME PATTERN FILE
    if grep -q -- "$2" "$3"; then echo "FAIL $1: '$2' in $3"; cat "$3"; fail=1; else echo "ok   $1"; fi
}
LOG=$C/dmesg_excerpt.txt

check help 0 "$PFI" ingest --help
has help-kernel-log "--kernel-log FILE" "$T/out"
has help-fatal-xids "--fatal-xids LIST" "$T/out"

# The whole capture without the kernel log: lost from the telemetry, no kernel section.
check case03-no-klog 0 "$PFI" ingest --dry-run --telemetry "$C/query_loop.csv"
has case03-no-klog-flag "flags: gpu-lost" "$T/out"
hasnt case03-no-klog-section "^kernel log:" "$T/out"

# With it: the Xid 79 and the notice are on gpu1 (00000000:3D:00.0 in the CSV, 0000:3d:00 in
# dmesg) and confirm the loss; the dmesg time is reported as written, never converted.
check case03-klog 0 "$PFI" ingest --dry-run --telemetry "$C/query_loop.csv" --kernel-log "$LOG"
has case03-klog-counts "kernel log: 1 file(s), 4 lines: 1 Xid, 1 GPU-lost notice, 2 continuation" "$T/out"
has case03-klog-xid "Xid 79 \[GPU has fallen off the bus\] on gpu1 (0000:3d:00.0) at \[ 8123.441915\] (seconds since boot, not on the telemetry clock)" "$T/out"
has case03-klog-confirms "FATAL: confirms the loss of gpu1 seen in the telemetry" "$T/out"
has case03-klog-notice "GPU-lost notice on gpu1 (0000:3d:00.0) at \[ 8123.452100\]" "$T/out"
has case03-klog-notice-text "installed in this system has fallen off the bus and is not responding to commands" "$T/out"
has case03-klog-lost-time "gpu1: .*LOST at t=1762093203.013 (last good 1762093202.011)" "$T/out"
has case03-klog-flag "flags: gpu-lost" "$T/out"
has case03-klog-invalid "INVALID for PFI" "$T/out"

# The first two samples only: the telemetry has not seen the loss; the kernel log has.
head -n 5 "$C/query_loop.csv" >"$T/head.csv"
check head-no-klog 0 "$PFI" ingest --dry-run --telemetry "$T/head.csv"
has head-no-klog-flags "flags: no-throughput" "$T/out"
hasnt head-no-klog-lost "LOST" "$T/out"
check head-klog 0 "$PFI" ingest --dry-run --telemetry "$T/head.csv" --kernel-log "$LOG"
has head-klog-marked "FATAL: gpu1 marked LOST, the run is invalid" "$T/out"
has head-klog-gpu1 "gpu1: .*LOST per the kernel log (last good t=1762093202.011; time of the loss unknown)" "$T/out"
hasnt head-klog-gpu0 "gpu0: .*LOST" "$T/out"
has head-klog-flag "flags: gpu-lost no-throughput" "$T/out"
has head-klog-note "gpu1: GPU lost per the kernel log: Xid 79 at \[ 8123.441915\]" "$T/err"

# Stored with the flag (2 = gpu-lost) and the kernel log among the sources.
check head-klog-store 0 "$PFI" ingest --db "$T/k.db" --group g --cap 300 \
    --telemetry "$T/head.csv" --kernel-log "$LOG"
check head-klog-runs 0 "$PFI" runs --db "$T/k.db" --format json
has head-klog-runs-flags '"flags": *130' "$T/out"
has head-klog-runs-source '"kernel-log"' "$T/out"

# journalctl -k form, upper-case bus, 8-digit domain: the same GPU.
sed 's/^\[ *\([0-9.]*\)\] /Nov 02 14:20:03 node7 kernel: /; s/PCI:0000:3d:00/PCI:00000000:3D:00/' "$LOG" >"$T/journal.txt"
check journal 0 "$PFI" ingest --dry-run --telemetry "$T/head.csv" --kernel-log "$T/journal.txt"
has journal-match "Xid 79 .* on gpu1 (0000:3d:00.0) at Nov 02 14:20:03 (host clock as printed" "$T/out"
has journal-flag "flags: gpu-lost" "$T/out"

# Another job's GPU (bus 5e): noted, never fatal for this run; an application Xid on gpu0:
# noted, not fatal.
printf '%s\n' "[ 8123.441915] NVRM: Xid (PCI:0000:5e:00): 79, GPU has fallen off the bus." \
    "[ 8124.000001] NVRM: Xid (PCI:0000:1b:00): 13, pid=4242, name=python, Graphics Exception" \
    "[ 8125.000002] usb 1-1: new high-speed USB device number 3" >"$T/other.txt"
check other-gpu 0 "$PFI" ingest --dry-run --telemetry "$T/head.csv" --kernel-log "$T/other.txt"
has other-gpu-noted "Xid 79 .* on 0000:5e:00.0 .*no GPU of this run has this bus id (another job's GPU, or another node): noted, not fatal for this run" "$T/out"
has other-gpu-app "Xid 13 .* on gpu0 (0000:1b:00.0) .*noted, not fatal for the run" "$T/out"
has other-gpu-ignored "1 other lines ignored" "$T/out"
hasnt other-gpu-lost "gpu-lost" "$T/out"
# --fatal-xids replaces the default list: Xid 13 fatal, Xid 79 not.
check fatal-xids 0 "$PFI" ingest --dry-run --telemetry "$T/head.csv" --kernel-log "$T/other.txt" \
    --fatal-xids 13
has fatal-xids-13 "Xid 13 .* on gpu0 .*FATAL: gpu0 marked LOST" "$T/out"
has fatal-xids-flag "flags: gpu-lost" "$T/out"
check fatal-xids-none 0 "$PFI" ingest --dry-run --telemetry "$T/head.csv" --kernel-log "$LOG" \
    --fatal-xids none
has fatal-xids-none-notice "GPU-lost notice on gpu1 .*FATAL: gpu1 marked LOST" "$T/out"
check fatal-xids-bad 2 "$PFI" ingest --dry-run --telemetry "$T/head.csv" --fatal-xids 79,x
has fatal-xids-bad-msg "fatal-xids: bad value .*: expected Xid numbers" "$T/err"

# Telemetry without bus ids (dcgmi dmon): nothing can be matched, said so, not fatal.
{ echo "#Entity POWER"; echo "ID"; echo "GPU 0 300"; echo "GPU 1 300"; } >"$T/dcgmi.txt"
check no-bus 0 "$PFI" ingest --dry-run --interval 1 --telemetry "$T/dcgmi.txt" --kernel-log "$LOG"
has no-bus-msg "the telemetry names no PCI bus ids" "$T/out"
hasnt no-bus-lost "gpu-lost" "$T/out"

# A kernel log without NVIDIA events, and an empty one: fine, nothing matched.
: >"$T/empty.txt"
check empty 0 "$PFI" ingest --dry-run --telemetry "$T/head.csv" --kernel-log "$T/empty.txt"
has empty-counts "kernel log: 1 file(s), 0 lines: 0 Xid" "$T/out"

# Bad input: a missing kernel log names the file, exit 1, nothing stored (README: 1 = bad or
# missing input); every file is tried.
check missing 1 "$PFI" ingest --db "$T/m.db" --group g --cap 300 --telemetry "$T/head.csv" \
    --kernel-log "$T/nope.log" --kernel-log "$LOG" --kernel-log "$T/nope2.log"
has missing-name "$T/nope.log: cannot open kernel log: No such file or directory" "$T/err"
has missing-name2 "$T/nope2.log: cannot open kernel log" "$T/err"
has missing-count "2 of 3 kernel log(s) failed: nothing stored" "$T/err"
[ ! -e "$T/m.db" ] && echo "ok   missing-nothing-stored" || { echo "FAIL missing-nothing-stored"; fail=1; }
check dir 1 "$PFI" ingest --dry-run --telemetry "$T/head.csv" --kernel-log "$T"
has dir-name "$T: " "$T/err"

# Terminal escapes in a kernel log never reach the terminal (the text is input).
printf '[ 8123.441915] NVRM: Xid (PCI:0000:3d:00): 79, GPU has \033[2J fallen \033]0;x\007 off the bus.\n' >"$T/esc.log"
check escapes 0 "$PFI" ingest --dry-run --telemetry "$T/head.csv" --kernel-log "$T/esc.log"
if LC_ALL=C grep -q "$(printf '\033')" "$T/out" "$T/err"; then echo "FAIL escapes-escaped: an ESC byte printed"; fail=1; else echo "ok   escapes-escaped"; fi
exit $fail
