#!/bin/sh
# pfi on a real single-node Slurm (tests/slurm/lib.sh): pfid on four emulated GPUs with its
# registration socket, pfi_spank.so in plugstack.conf, three batch jobs with different
# --pfi-flex tiers (rigid, 2 = medium = the grid event's Flex 2, pausable; the pausable one
# runs no GPU process at all),
# all of one class on GPUs of one model, so that only the tiers tell the jobs apart.
# Asserts: every job's GPUs mapped (hpc_job) as soon as the job runs; pfi control --slurm
# under a 30 % event caps the pausable job deepest and leaves the rigid one alone; a budget
# below every GPU's minimum cap suspends the pausable job only (never the rigid or medium
# one) and resumes it after the event; every GPU back on its original limit within 5 s of
# its job's end; the accounting (energy, time under caps, caps) in each job's AdminComment
# and from pfi report --job; the medium job accounted as Flex 2 (allowance 25 %) by the
# controller's tiers, with no tiers file; sbatch refuses a bad tier. Skipped (77) only where Slurm or the
# plugin is missing.
# Usage: e2e.sh PFI PFID PFI_SPANK_SO SOURCE_DIR
set -u
PFI=$1
PFID=$2
SPANK=$3
SRC=$4
. "$SRC/tests/slurm/lib.sh"
if ! slurm_have; then
    echo "SKIP: Slurm (slurmctld, slurmd, munged, sbatch) is not installed; scripts/deps.sh installs it"
    exit 77
fi
if [ ! -f "$SPANK" ]; then
    echo "SKIP: $SPANK was not built (slurm/spank.h missing: apt-get install libslurm-dev)"
    exit 77
fi
SL=$(mktemp -d /tmp/pfi-slurm.XXXXXX)
chmod 755 "$SL"
PF=""
CTL=""
cleanup() {
    [ -n "$CTL" ] && kill -KILL "$CTL" 2>/dev/null
    slurm_stop
    [ -n "$PF" ] && kill -TERM "$PF" 2>/dev/null && wait "$PF" 2>/dev/null
    if [ $fail -ne 0 ]; then
        echo "--- pfid log"; tail -n 40 "$SL/pfid.log"
        echo "--- slurmd log"; grep -i -E 'pfi|error' "$SL/log/slurmd.log" | tail -n 20
    fi
    rm -rf "$SL"
}
fail=0
trap cleanup EXIT
trap 'exit 2' HUP INT TERM
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }

# pfid: five emulated GPUs of one model, emulated jobs on GPUs 0-1, 2, 3 and 4 whose
# throughput goes to whichever job owns their first GPU
# its own (empty) config file: never a /etc/pfid/pfid.conf the machine may have
: >"$SL/pfid.conf"
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$SL/token"
chmod 600 "$SL/token"
"$PFID" -c "$SL/pfid.conf" -l 127.0.0.1:0 -s port_file="$SL/port" -b emulated \
    --emulate 'gpus=2,alpha=0.8,tput=24000,startup=0,report=0.5;gpus=1,alpha=0.8,tput=12000,startup=0,report=0.5;gpus=1,alpha=0.8,tput=12000,startup=0,report=0.5;gpus=1,alpha=0.8,tput=12000,startup=0,report=0.5' \
    -t "$SL/token" -j "$SL/journal" -i 200ms -s slurm_socket="$SL/pfid.sock" -s jobs=slurm \
    -s hold_max=1h 2>"$SL/pfid.log" &
PF=$!
slurm_poll 20 test -S "$SL/pfid.sock" || { bad "pfid did not open its socket"; exit 1; }
slurm_poll 20 test -s "$SL/port" || { bad "pfid did not listen"; exit 1; }
URL="http://127.0.0.1:$(cat "$SL/port")"
echo "$URL $(cat "$SL/token")" >"$SL/agents"

# scontrol for the plugin (it runs under slurmd, which reads our slurm.conf through -f)
cat >"$SL/scontrol" <<W
#!/bin/sh
SLURM_CONF=$SL/slurm.conf exec /usr/bin/scontrol "\$@"
W
chmod +x "$SL/scontrol"
echo "required $SPANK socket=$SL/pfid.sock scontrol=$SL/scontrol timeout=5" >"$SL/plugstack.conf"
# power-aware admission: PrologSlurmctld asks the controller (its port, once one listens)
cat >"$SL/admit" <<W
#!/bin/sh
export SLURM_CONF=$SL/slurm.conf
[ -s $SL/ctl.port ] || exit 0
exec $PFI slurm admit --controller http://127.0.0.1:\$(cat $SL/ctl.port) 2>>$SL/admit.log
W
chmod +x "$SL/admit"
SL_GPUS=5
SL_EXTRA="PrologSlurmctld=$SL/admit"
slurm_start || { fail=1; exit 1; }
ok "Slurm up with pfi_spank.so in plugstack.conf"

if sbatch --parsable --gres=gpu:1 --pfi-flex=wild --wrap true >"$SL/bad.out" 2>&1; then
    bad "sbatch accepted --pfi-flex=wild"
else
    grep -q 'rigid, low (= 1, flex1), medium (= 2, flex2), high (= 3, flex3), pausable' "$SL/bad.out" && ok "sbatch refuses an unknown tier, naming the tiers" || bad "sbatch message: $(cat "$SL/bad.out")"
fi
if sbatch --parsable --gres=gpu:1 --pfi-class='a"b' --wrap true >/dev/null 2>&1; then
    bad "sbatch accepted a class with a quote"
else
    ok "sbatch refuses a class with a quote"
fi

# the workload: prints its GPUs, then until told to stop its throughput as pfid measures it
cat >"$SL/work.sh" <<'W'
#!/bin/sh
echo "gpus=$SLURM_JOB_GPUS"
i=0
while [ ! -e "$STOP_DIR/stop.$SLURM_JOB_ID" ] && [ $i -lt 1200 ]; do
    t=$(curl -s "$AGENT/metrics" | sed -n "s/^pfi_job_throughput_tokens_per_second{job=\"$SLURM_JOB_ID\"[^}]*} \(.*\)/\1/p")
    [ -n "$GPU_WORK" ] && [ -n "$t" ] && echo "iteration $i | throughput $t tokens/s"
    i=$((i + 1))
    sleep 0.5
done
W
chmod +x "$SL/work.sh"
export STOP_DIR="$SL" AGENT="$URL"
J1=$(GPU_WORK=1 sbatch --parsable --gres=gpu:2 --pfi-flex=rigid --pfi-class=dense -o "$SL/o.%j" "$SL/work.sh")
J2=$(GPU_WORK=1 sbatch --parsable --gres=gpu:1 --pfi-flex=2 --pfi-class=dense -o "$SL/o.%j" "$SL/work.sh")
J3=$(GPU_WORK= sbatch --parsable --gres=gpu:1 --pfi-flex=pausable --pfi-class=dense --pfi-min-throughput=0 -o "$SL/o.%j" "$SL/work.sh")
[ -n "$J1" ] && [ -n "$J2" ] && [ -n "$J3" ] || { bad "sbatch refused a job"; exit 1; }
for j in $J1 $J2 $J3; do
    slurm_poll 60 sh -c "[ \"\$(scontrol show job $j | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')\" = RUNNING ]" || bad "job $j not running in 60 s"
done
t_run=$(now)
# mapping: within one controller period (1 s) of the jobs running; each job's GPUs are the
# ones Slurm gave it (SLURM_JOB_GPUS)
mapped() {
    curl -s "$URL/metrics" >"$SL/m"
    for j in $J1 $J2 $J3; do
        slurm_poll 5 grep -q '^gpus=' "$SL/o.$j" || return 1
        for g in $(sed -n 's/^gpus=//p' "$SL/o.$j" | tr ',' ' '); do
            grep -q "^pfi_gpu_hpc_job_info{gpu=\"$g\",.*hpc_job=\"$j\"} 1" "$SL/m" || return 1
        done
    done
}
if slurm_poll 1 mapped; then
    ok "every job's GPUs mapped to it (hpc_job) within $(since "$t_run") s of running, the job without a GPU process too"
else
    bad "mapping not complete within 1 s: $(grep hpc_job "$SL/m" | tr '\n' ' ')"
fi
grep -q "pfi_slurm_job_info{hpc_job=\"$J3\",user=\"root\",class=\"dense\",flex=\"pausable\"} 1" "$SL/m" && ok "job $J3's user, class and tier in pfi_slurm_job_info" || bad "job info: $(grep slurm_job_info "$SL/m")"
slurm_poll 5 sh -c "curl -s $URL/metrics | grep -q '^pfi_slurm_job_energy_joules_total{hpc_job=\"$J1\"} [1-9]'" && ok "per-job energy counter grows from the job's start" || bad "no energy counter for $J1"
squeue --json >"$SL/sq.json" 2>/dev/null
python3 - "$SL/sq.json" "$J3" <<'PY' && ok "squeue --json shows job $J3's tier in its AdminComment" || bad "AdminComment of $J3 without the tier"
import json, sys
d = json.load(open(sys.argv[1]))
j = [j for j in d["jobs"] if str(j["job_id"]) == sys.argv[2]][0]
sys.exit(0 if j["admin_comment"].startswith("pfi:") and '"flex":"pausable"' in j["admin_comment"] else 1)
PY

# GPU caps as pfid reports them: "index cap_w original_cap_w" lines
caps() { curl -s "$URL/v1/state" | python3 -c 'import json,sys
for g in json.load(sys.stdin)["gpus"]: print(g["index"], g["cap_w"], g["original_cap_w"])'; }
gpu_of() { sed -n 's/^gpus=//p' "$SL/o.$1" | cut -d, -f1; }
G1=$(gpu_of "$J1")
G2=$(gpu_of "$J2")
G3=$(gpu_of "$J3")

# pfid's uncapped baseline of a job's tokens/s (what its tokens lost are measured against)
# is the mean while uncapped: the event starts once the jobs that report throughput have
# settled (three readings 0.3 s apart within 3 %), not while the emulated jobs ramp up (a
# slow host, the sanitizer build, left job 2 a baseline below its capped tokens/s)
settled_tput() {
    python3 - "$URL" "$J1" "$J2" <<'PY'
import re, sys, time, urllib.request
url, jobs = sys.argv[1], sys.argv[2:]
hist = []
for _ in range(3):
    t = urllib.request.urlopen(url + "/metrics", timeout=2).read().decode()
    v = []
    for j in jobs:
        m = re.search(r'^pfi_job_throughput_tokens_per_second\{job="%s"[^}]*\} (\S+)$' % j, t, re.M)
        v.append(float(m.group(1)) if m else 0.0)
    hist.append(v)
    time.sleep(0.3)
ok = all(min(h[k] for h in hist) > 0 and max(h[k] for h in hist) <= 1.03 * min(h[k] for h in hist)
         for k in range(len(jobs)))
sys.exit(0 if ok else 1)
PY
}
slurm_poll 60 settled_tput && ok "jobs $J1 and $J2 report settled throughput before the event" ||
    bad "jobs $J1 and $J2: throughput not settled in 60 s"

# a 30 % event: the pausable job cut deepest, the rigid one not at all
"$PFI" control --agents "$SL/agents" --reduction 30% --duration 30 --run-for 30 --period 1 \
    --slurm --db "$SL/audit.db" >"$SL/ctl1.out" 2>"$SL/ctl1.err" &
CTL=$!
deep() {
    caps >"$SL/caps"
    c1=$(awk -v g="$G1" '$1==g {print $2/$3}' "$SL/caps")
    c2=$(awk -v g="$G2" '$1==g {print $2/$3}' "$SL/caps")
    c3=$(awk -v g="$G3" '$1==g {print $2/$3}' "$SL/caps")
    awk -v a="$c1" -v b="$c2" -v c="$c3" 'BEGIN { exit !(c < b && c < a && a > 0.999) }'
}
if slurm_poll 25 deep; then
    ok "30 % event: pausable job $J3 capped deepest ($(awk -v g="$G3" '$1==g {print $2 " of " $3}' "$SL/caps") W), medium $J2 at $(awk -v g="$G2" '$1==g {print $2}' "$SL/caps") W, rigid $J1 uncapped"
else
    bad "30 % event caps: $(tr '\n' ';' <"$SL/caps") (GPUs $G1 $G2 $G3)"
    tail -n 5 "$SL/ctl1.out" "$SL/ctl1.err"
fi
kill -TERM "$CTL"; wait "$CTL"; CTL=""
grep -q "joined job $J3 (tier pausable)" "$SL/ctl1.err" && ok "the controller saw the jobs join with their tiers" || bad "no join line: $(head -5 "$SL/ctl1.err")"
grep -q "^  $J2 .*Flex 2 .*allowance 25%" "$SL/ctl1.err" && grep -q "^  $J1 .*custom .*allowance 0%" "$SL/ctl1.err" &&
    ok "the grid tiers' accounting took job $J2 (--pfi-flex=2) as Flex 2 and $J1 (rigid) with no allowance, without a tiers file: $(grep "^  $J2 " "$SL/ctl1.err" | tr -s ' ')" ||
    bad "tier summary: $(grep -A4 'tiers (life-average' "$SL/ctl1.err" | tr '\n' ';')"
grep -q 'no agent reports it' "$SL/ctl1.err" && bad "a mapped job reported unseen: $(grep 'no agent' "$SL/ctl1.err")" || ok "every running Slurm job found on an agent"

# a budget below every GPU's minimum cap: only the pausable job is suspended, then resumed
"$PFI" control --agents "$SL/agents" --budget-w 100 --duration 10 --run-for 120 --period 1 \
    --slurm-suspend --db "$SL/audit.db" --listen 0 >"$SL/ctl2.out" 2>"$SL/ctl2.err" &
CTL=$!
slurm_poll 10 grep -q 'listening on 127.0.0.1:' "$SL/ctl2.err" || bad "controller did not listen"
sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$SL/ctl2.err" | head -n 1 >"$SL/ctl.port"
slurm_poll 10 sh -c "curl -s http://127.0.0.1:$(cat "$SL/ctl.port")/metrics | grep -q '^pfi_ctl_event_active 1'" || bad "the controller's event is not on"
J4=$(GPU_WORK=1 sbatch --parsable --gres=gpu:1 --pfi-flex=low -o "$SL/o.%j" "$SL/work.sh")
state() { scontrol show job "$1" | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p'; }
if slurm_poll 20 sh -c "[ \"\$(scontrol show job $J3 | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')\" = SUSPENDED ]"; then
    ok "budget below the minimum: pausable job $J3 suspended"
else
    bad "job $J3 not suspended: $(state "$J3"); $(tail -n 3 "$SL/ctl2.err")"
fi
held() { scontrol show job "$J4" | grep -q 'AdminComment=pfi:held:' && [ "$(state "$J4")" = PENDING ]; }
if slurm_poll 20 held; then
    ok "during the event job $J4 is held at admission: $(squeue -h -j "$J4" -o '%T, %r'); $(scontrol show job "$J4" | sed -n 's/.*AdminComment=\(.*\)/\1/p' | cut -c1-110)"
else
    bad "job $J4 not held: $(state "$J4") $(cat "$SL/admit.log" 2>/dev/null)"
fi
if slurm_poll 30 sh -c "[ \"\$(scontrol show job $J3 | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')\" = RUNNING ]"; then
    ok "job $J3 resumed after the event"
else
    bad "job $J3 not resumed: $(state "$J3"): $(tail -n 8 "$SL/ctl2.err")"
fi
if slurm_poll 60 sh -c "[ \"\$(scontrol show job $J4 | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')\" = RUNNING ]"; then
    ok "job $J4 released after the event and running"
else
    bad "job $J4 after the event: $(state "$J4") $(squeue -h -j "$J4" -o '%r')"
fi
rm -f "$SL/ctl.port"
kill -TERM "$CTL"; wait "$CTL"; CTL=""
if grep -q "suspend job $J1\|suspend job $J2\|suspend job $J4" "$SL/ctl2.err"; then
    bad "a rigid or medium job was suspended"
else
    ok "rigid $J1 and medium $J2 never suspended"
fi
n=$(python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute(\"select count(*) from slurm_action where job=? and action in ('suspend','resume') and ok=1 and reason<>''\", (sys.argv[2],)).fetchone()[0])" "$SL/audit.db" "$J3")
[ "$n" = 2 ] && ok "suspend and resume of $J3 audited with their reasons" || bad "audit rows for $J3: $n"

mapped4() {
    grep -q '^gpus=' "$SL/o.$J4" || return 1
    for g in $(sed -n 's/^gpus=//p' "$SL/o.$J4" | tr ',' ' '); do
        curl -s "$URL/metrics" | grep -q "^pfi_gpu_hpc_job_info{gpu=\"$g\",.*hpc_job=\"$J4\"} 1" || return 1
    done
}
# the ends: each job's GPUs back on their original limits within 5 s, caps held by a lease
# (an hour) on every GPU until then
body=$(python3 -c 'import json,sys; print(json.dumps({"request_id": "hold-1", "lease_s": 3600,
    "caps": [{"uuid": g["uuid"], "cap_w": 300} for g in json.load(sys.stdin)["gpus"]]}))' <<J
$(curl -s "$URL/v1/state")
J
)
code=$(curl -s -o "$SL/put" -w '%{http_code}' -X PUT -H "Authorization: Bearer $(cat "$SL/token")" -d "$body" "$URL/v1/caps")
caps >"$SL/caps"
[ "$code" = 200 ] && awk '$2 != 300 {exit 1}' "$SL/caps" && ok "every GPU capped at 300 W under an hour's lease before the jobs end" || bad "PUT /v1/caps: $code $(cat "$SL/put")"
slurm_poll 5 mapped4 && ok "job $J4 mapped once released" || bad "job $J4 not mapped after its release"
for j in $J4 $J3 $J2 $J1; do
    touch "$SL/stop.$j"
    slurm_poll 30 sh -c "! squeue -h -j $j -t RUNNING,COMPLETING 2>/dev/null | grep -q ."
    t_end=$(now)
    restored() {
        caps >"$SL/caps"
        for g in $(sed -n 's/^gpus=//p' "$SL/o.$j" | tr ',' ' '); do
            awk -v g="$g" '$1==g && $2!=$3 {exit 1}' "$SL/caps" || return 1
        done
    }
    if slurm_poll 5 restored; then
        ok "job $j ended: its GPUs on their original limits $(since "$t_end") s later"
    else
        bad "job $j's GPUs not restored within 5 s: $(tr '\n' ';' <"$SL/caps")"
    fi
done
for j in $J1 $J2 $J3; do
    ac=$(scontrol show job "$j" | sed -n 's/.*AdminComment=\(.*\)/\1/p')
    case $ac in
    pfi:*energy_j*capped_s*) ok "job $j AdminComment: $ac" ;;
    *) bad "job $j AdminComment: $ac" ;;
    esac
done
ac3=$(scontrol show job "$J3" | sed -n 's/.*AdminComment=pfi:\(.*\)/\1/p')
python3 -c 'import json,sys; a=json.loads(sys.argv[1]); sys.exit(0 if a["capped_s"] > 0 and a["caps_w"] and a["energy_j"] > 0 else 1)' "$ac3" && ok "job $J3's accounting shows its time under caps and the caps" || bad "job $J3 accounting: $ac3"
ac2=$(scontrol show job "$J2" | sed -n 's/.*AdminComment=pfi:\(.*\)/\1/p')
python3 -c 'import json,sys; a=json.loads(sys.argv[1]); sys.exit(0 if a["capped_s"] > 0 and a.get("tokens_lost", 0) > 0 else 1)' "$ac2" && ok "job $J2 (capped while reporting throughput): tokens lost estimated" || bad "job $J2 accounting without tokens_lost: $ac2"
"$PFI" report --job "$J3" --socket "$SL/pfid.sock" >"$SL/rep" 2>&1 && grep -q 'capped' "$SL/rep" && ok "pfi report --job $J3: $(head -3 "$SL/rep" | tr '\n' ' ')" || bad "pfi report --job: $(cat "$SL/rep")"
grep -q '^iteration [0-9]* | throughput [0-9.]* tokens/s' "$SL/o.$J1" && ok "the workload printed its throughput lines" || bad "no throughput lines in job $J1's output"
[ $fail -eq 0 ] && echo "all Slurm end-to-end checks passed"
exit $fail
