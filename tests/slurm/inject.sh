#!/bin/sh
# Hostile values through every path into pfid's Slurm registration (pfi slurm prolog/epilog
# flags and environment, raw requests on the socket): quoting, control characters, lengths,
# unknown tiers, GPUs that are not there, malformed and oversized JSON, a peer that is not
# root. None may register a job, crash or stall pfid, or break its metrics; each is refused
# with a message saying what was expected. Needs no Slurm.
# Usage: inject.sh PFI PFID
set -u
PFI=$1
PFID=$2
T=$(mktemp -d /tmp/pfi-inject.XXXXXX)
chmod 755 "$T"
PF=""
fail=0
cleanup() {
    [ -n "$PF" ] && kill -TERM "$PF" 2>/dev/null && wait "$PF" 2>/dev/null
    [ $fail -ne 0 ] && tail -n 30 "$T/pfid.log"
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 2' HUP INT TERM
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
poll() { # poll SECONDS CMD...
    _e=$(($(date +%s) + $1))
    shift
    while ! "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -ge "$_e" ] && return 1
        sleep 0.1
    done
}
# its own (empty) config file: never a /etc/pfid/pfid.conf the machine may have
: >"$T/pfid.conf"
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/token"
chmod 600 "$T/token"
"$PFID" -c "$T/pfid.conf" -l 127.0.0.1:0 -s port_file="$T/port" -b emulated --emulate 'gpus=4,startup=0' \
    -t "$T/token" -j "$T/journal" -i 200ms -s slurm_socket="$T/s.sock" -s jobs=slurm \
    2>"$T/pfid.log" &
PF=$!
poll 20 test -S "$T/s.sock" && poll 20 test -s "$T/port" || { bad "pfid did not start"; exit 1; }
URL="http://127.0.0.1:$(cat "$T/port")"
S="--socket $T/s.sock --no-comment --strict"

# refuse CASE EXPECTED_RC ARGS...: pfi slurm prolog ARGS must exit EXPECTED_RC
refuse() {
    what=$1 want=$2
    shift 2
    # shellcheck disable=SC2086
    "$PFI" slurm prolog $S "$@" >"$T/out" 2>&1
    rc=$?
    if [ $rc -eq "$want" ] && [ -s "$T/out" ]; then
        ok "$what refused (exit $rc): $(head -c 160 "$T/out" | tr '\n' ' ')"
    else
        bad "$what: exit $rc (want $want): $(cat "$T/out")"
    fi
}
long=$(printf 'x%.0s' $(seq 1 300))
refuse "job id with a shell command" 2 --job '1;touch /tmp/pwned' --gpus 0
refuse "job id \$(id)" 2 --job '$(id)' --gpus 0
refuse "job id 0" 2 --job 0 --gpus 0
refuse "job id of 300 digits" 2 --job "$(printf '1%.0s' $(seq 1 300))" --gpus 0
refuse "class with a quote and a newline" 2 --job 5 --gpus 0 --class 'a"b
c'
refuse "class of 300 bytes" 2 --job 5 --gpus 0 --class "$long"
refuse "class in UTF-8" 2 --job 5 --gpus 0 --class 'dénse'
refuse "unknown tier" 2 --job 5 --gpus 0 --flex 'ultra'
refuse "tier with a quote" 2 --job 5 --gpus 0 --flex 'high"'
refuse "min throughput 1.5" 2 --job 5 --gpus 0 --min-throughput 1.5
refuse "min throughput nan" 2 --job 5 --gpus 0 --min-throughput nan
refuse "pfi -1" 2 --job 5 --gpus 0 --pfi -1
refuse "GPU list with a path" 2 --job 5 --gpus '0,../../etc'
refuse "GPU range backwards" 2 --job 5 --gpus '3-1'
refuse "user with a quote" 2 --job 5 --gpus 0 --user 'ro"ot'
refuse "GPU 9 of 4" 1 --job 5 --gpus 9
SLURM_JOB_ID='7"}' SLURM_JOB_GPUS=0 "$PFI" slurm prolog $S >"$T/out" 2>&1
[ $? -eq 2 ] && ok "SLURM_JOB_ID with a quote from the environment refused" || bad "env job id: $(cat "$T/out")"
"$PFI" slurm prolog $S --job 5 --gpus 0 --class 'x' --flex pausable --min-throughput 0.25 --pfi 1.5 --user alice >"$T/out" 2>&1 &&
    ok "a sane job registers: $(cat "$T/out")" || bad "sane job: $(cat "$T/out")"
"$PFI" slurm prolog $S --job 6 --gpus 1 >/dev/null 2>&1 && "$PFI" slurm prolog $S --job 7 --gpus 1 >"$T/out" 2>&1 &&
    curl -s "$URL/metrics" | grep -q 'pfi_gpu_hpc_job_info{gpu="1",uuid="[^"]*",hpc_job="7"} 1' &&
    grep -q 'job 7 takes 1 GPU(s) of job 6' "$T/pfid.log" &&
    "$PFI" report --job 6 --socket "$T/s.sock" --json | grep -q '"gpus":1' &&
    ok "a job starting on a GPU another job holds takes it over (that job's end was missed; its accounting kept)" || bad "takeover: $(cat "$T/out")"

# raw requests on the socket
raw() { # raw NAME PYTHON_BYTES_EXPR: send, print the answer
    python3 - "$T/s.sock" "$2" <<'PY' >"$T/raw" 2>&1
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
try:
    s.sendall(eval(sys.argv[2]))
    s.shutdown(socket.SHUT_WR)
except OSError:
    pass
data = b""
while True:
    try:
        b = s.recv(65536)
    except OSError:
        break
    if not b:
        break
    data += b
sys.stdout.write(data.decode("utf-8", "replace"))
PY
    if grep -q '"ok":false' "$T/raw"; then
        ok "raw $1 refused: $(head -c 140 "$T/raw")"
    else
        bad "raw $1: $(cat "$T/raw")"
    fi
}
raw "empty request" 'b""'
raw "not JSON" 'b"hello"'
raw "a JSON array" 'b"[1,2]"'
raw "unknown op" 'b"{\"op\":\"rm\",\"job\":\"1\"}"'
raw "job as a number" 'b"{\"op\":\"start\",\"job\":12,\"gpus\":[\"1\"]}"'
raw "job with a NUL" 'json.dumps({"op": "start", "job": "1\u00002", "gpus": ["1"]}).encode()'
raw "duplicate keys" 'b"{\"op\":\"start\",\"job\":\"8\",\"job\":\"9\",\"gpus\":[\"1\"]}"'
raw "GPU as an object" 'b"{\"op\":\"start\",\"job\":\"8\",\"gpus\":[{\"a\":1}]}"'
raw "GPU as an empty string" 'b"{\"op\":\"start\",\"job\":\"8\",\"gpus\":[\"\"]}"'
raw "GPU -1" 'b"{\"op\":\"start\",\"job\":\"8\",\"gpus\":[\"-1\"]}"'
raw "GPU UUID unknown" 'b"{\"op\":\"start\",\"job\":\"8\",\"gpus\":[\"GPU-nope\"]}"'
raw "class with a label breaker" 'json.dumps({"op": "start", "job": "8", "gpus": ["1"], "class": "x\"} 1\nevil 1"}).encode()'
raw "user with a label breaker" 'json.dumps({"op": "start", "job": "8", "gpus": ["1"], "user": "a\"}"}).encode()'
raw "job id of 16 digits" 'json.dumps({"op": "start", "job": "1234567890123456", "gpus": ["1"]}).encode()'
raw "tier unknown" 'b"{\"op\":\"start\",\"job\":\"8\",\"gpus\":[\"1\"],\"flex\":\"none\"}"'
raw "min_throughput as text" 'b"{\"op\":\"start\",\"job\":\"8\",\"gpus\":[\"1\"],\"min_throughput\":\"0.5\"}"'
raw "pfi infinite" 'b"{\"op\":\"start\",\"job\":\"8\",\"gpus\":[\"1\"],\"pfi\":1e999}"'
raw "deep nesting" 'b"[" * 10000'
raw "20 KB request" 'b"{\"op\":\"start\",\"job\":\"8\",\"class\":\"" + b"a" * 20000 + b"\"}"'
raw "end of a job never registered" 'b"{\"op\":\"end\",\"job\":\"999\"}"'
raw "report of an unknown job" 'b"{\"op\":\"report\",\"job\":\"999\"}"'
# a client that connects and says nothing: answered within the connection timeout, and
# pfid serves the next one
python3 -c "import socket,time,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); open(sys.argv[2], 'w').close(); time.sleep(10)" "$T/s.sock" "$T/slow.connected" &
SLOW=$!
n=0 # a bounded poll until the silent client has connected
until [ -e "$T/slow.connected" ] || [ $n -gt 100 ]; do n=$((n + 1)); sleep 0.05; done
t0=$(date +%s)
"$PFI" slurm prolog $S --job 10 --gpus 3 >"$T/out" 2>&1 && [ $(($(date +%s) - t0)) -le 6 ] &&
    ok "a client silent for 10 s delays the next registration by the 2 s connection timeout only" || bad "after a silent client ($(($(date +%s) - t0)) s): $(cat "$T/out")"
kill "$SLOW" 2>/dev/null
wait $SLOW 2>/dev/null

# a peer that is not root
if command -v setpriv >/dev/null 2>&1; then
    setpriv --reuid=65534 --regid=65534 --clear-groups "$PFI" slurm prolog $S --job 11 --gpus 2 >"$T/out" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && grep -q 'only root may register jobs (peer uid 65534)' "$T/out"; then
        ok "uid 65534 refused: $(head -c 160 "$T/out")"
    else
        bad "non-root: exit $rc: $(cat "$T/out")"
    fi
    setpriv --reuid=65534 --regid=65534 --clear-groups "$PFI" slurm epilog $S --job 5 >"$T/out" 2>&1
    [ $? -eq 1 ] && ok "uid 65534 cannot end a job either" || bad "non-root end: $(cat "$T/out")"
else
    bad "setpriv missing: cannot test a non-root peer"
fi

# pfid alive, metrics sane, exactly jobs 5 and 10 registered
curl -sf "$URL/healthz" >/dev/null && ok "pfid alive after it all" || bad "pfid /healthz fails"
curl -s "$URL/metrics" >"$T/m"
jobs=$(sed -n 's/^pfi_slurm_job_info{hpc_job="\([^"]*\)".*/\1/p' "$T/m" | sort | tr '\n' ' ')
[ "$jobs" = "10 5 7 " ] && ok "only jobs 5, 7 and 10 registered" || bad "registered: '$jobs'"
grep -q 'pfi_slurm_job_info{hpc_job="5",user="alice",class="x",flex="pausable"} 1' "$T/m" && ok "job 5's labels as given" || bad "job 5 labels: $(grep slurm_job_info "$T/m")"
if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$T/m" >"$T/pt" 2>&1 && ok "promtool accepts the metrics" || { grep -q -v 'counter metrics should have "_total"' "$T/pt" && bad "promtool: $(cat "$T/pt")" || ok "promtool: lint notes only"; }
fi
"$PFI" slurm epilog $S --job 5 >"$T/out" 2>&1 && grep -q '"restored":1' "$T/out" && ok "job 5 ends and its GPU is restored" || bad "end of job 5: $(cat "$T/out")"
# pfid restarted while jobs 7 and 10 run: it keeps them (SOCKET.jobs)
kill -TERM "$PF"
wait "$PF"
"$PFID" -c "$T/pfid.conf" -l 127.0.0.1:0 -s port_file="$T/port2" -b emulated --emulate 'gpus=4,startup=0' \
    -t "$T/token" -j "$T/journal" -i 200ms -s slurm_socket="$T/s.sock" -s jobs=slurm \
    2>>"$T/pfid.log" &
PF=$!
poll 20 test -s "$T/port2" || bad "pfid did not restart"
URL="http://127.0.0.1:$(cat "$T/port2")"
curl -s "$URL/metrics" >"$T/m"
jobs=$(sed -n 's/^pfi_slurm_job_info{hpc_job="\([^"]*\)".*/\1/p' "$T/m" | sort | tr '\n' ' ')
[ "$jobs" = "10 7 " ] && ok "a restarted pfid keeps jobs 7 and 10 from $T/s.sock.jobs" || bad "after restart: '$jobs'"
printf '[{"job":"1;x","gpus":["GPU-0"]},{"job":"12","gpus":["GPU-9"]},7,{"job":"13","gpus":["EMU-00000001-0002"],"start_wall_s":1e300},{"job":"14","gpus":["EMU-00000001-0003"],"start_wall_s":-5}]' >"$T/s.sock.jobs"
kill -TERM "$PF"
wait "$PF"
"$PFID" -c "$T/pfid.conf" -l 127.0.0.1:0 -s port_file="$T/port3" -b emulated --emulate 'gpus=4,startup=0' \
    -t "$T/token" -j "$T/journal" -i 200ms -s slurm_socket="$T/s.sock" -s jobs=slurm \
    2>>"$T/pfid.log" &
PF=$!
poll 20 test -s "$T/port3" && curl -sf "http://127.0.0.1:$(cat "$T/port3")/healthz" >/dev/null &&
    ! curl -s "http://127.0.0.1:$(cat "$T/port3")/metrics" | grep -q '^pfi_slurm_job_info' &&
    ok "a state file with bad entries: each dropped, pfid up" || bad "bad state file: $(tail -5 "$T/pfid.log")"
[ $fail -eq 0 ] && echo "all Slurm injection checks passed"
exit $fail
