# A real single-node Slurm for the tests (sourced): munged, slurmctld and slurmd in the
# foreground as root, every file under $SL (a temporary folder), ports chosen free, four fake
# GPUs in gres.conf (character devices made with mknod, regular files where mknod is refused).
# Every wait is a bounded poll; slurm_stop (called by the sourcing test's EXIT trap) ends
# exactly the daemons started here, by pid.
# Needs: SL (an empty folder), optionally SL_GPUS (fake GPUs, 4), SL_PLUGSTACK (a plugstack.conf), SL_PROLOG /
# SL_EPILOG (Prolog= / Epilog= commands), SL_EXTRA (more slurm.conf lines).
# Exit status 77 means "skip": Slurm is not installed and cannot be (not root, no apt-get).

SL_PIDS=""

# slurm_have: are the programs there? Try to install them when root and CI asks for it.
slurm_have() {
    for p in slurmctld slurmd munged sbatch squeue scontrol sinfo; do
        command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] || return 1
    done
    return 0
}

# slurm_free_port: a TCP port nothing listens on (asked of the kernel through python3).
slurm_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# slurm_poll SECONDS CMD...: run CMD every 0.2 s until it succeeds; 1 when time runs out.
slurm_poll() {
    _lim=$1
    shift
    _end=$(($(date +%s) + _lim))
    while ! "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -ge "$_end" ] && return 1
        sleep 0.2
    done
    return 0
}

slurm_config() {
    SL_HOST=$(hostname -s)
    mkdir -p "$SL/state" "$SL/spool/$(hostname -s)" "$SL/log" "$SL/dev" "$SL/munge"
    chmod 700 "$SL/munge"
    SL_GPUS=${SL_GPUS:-4}
    for i in $(seq 0 $((SL_GPUS - 1))); do
        rm -f "$SL/dev/nvidia$i"
        mknod "$SL/dev/nvidia$i" c 1 3 2>/dev/null || : >"$SL/dev/nvidia$i"
    done
    SL_CTLD_PORT=$(slurm_free_port)
    SL_D_PORT=$(slurm_free_port)
    while [ "$SL_D_PORT" = "$SL_CTLD_PORT" ]; do SL_D_PORT=$(slurm_free_port); done
    cat >"$SL/slurm.conf" <<CONF
ClusterName=pfitest
SlurmctldHost=$SL_HOST(127.0.0.1)
SlurmctldPort=$SL_CTLD_PORT
SlurmdPort=$SL_D_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SL/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$SL/state
SlurmdSpoolDir=$SL/spool/%n
SlurmctldPidFile=$SL/slurmctld.pid
SlurmdPidFile=$SL/slurmd.pid
SlurmctldLogFile=$SL/log/slurmctld.log
SlurmdLogFile=$SL/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
PrologFlags=Alloc
KillWait=5
InactiveLimit=0
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=60
GresTypes=gpu
PlugStackConfig=${SL_PLUGSTACK:-$SL/plugstack.conf}
${SL_PROLOG:+Prolog=$SL_PROLOG}
${SL_EPILOG:+Epilog=$SL_EPILOG}
${SL_EXTRA:-}
NodeName=$SL_HOST NodeAddr=127.0.0.1 CPUs=8 RealMemory=4000 Gres=gpu:$SL_GPUS State=UNKNOWN
PartitionName=main Nodes=$SL_HOST Default=YES MaxTime=INFINITE State=UP
CONF
    cat >"$SL/gres.conf" <<CONF
NodeName=$SL_HOST Name=gpu File=$SL/dev/nvidia[0-$((SL_GPUS - 1))]
CONF
    [ -e "$SL/plugstack.conf" ] || : >"$SL/plugstack.conf"
    export SLURM_CONF="$SL/slurm.conf"
}

# slurm_start: the three daemons; 0 once the node is idle, 1 (logs printed) otherwise.
slurm_start() {
    slurm_config
    dd if=/dev/urandom of="$SL/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 400 "$SL/munge/munge.key"
    /usr/sbin/munged --foreground --force --socket="$SL/munge/munge.socket" \
        --key-file="$SL/munge/munge.key" --pid-file="$SL/munge/munged.pid" \
        --log-file="$SL/log/munged.log" --seed-file="$SL/munge/seed" 2>>"$SL/log/munged.err" &
    SL_PIDS="$SL_PIDS $!"
    if ! slurm_poll 20 test -S "$SL/munge/munge.socket"; then
        echo "slurm: munged did not start" >&2
        cat "$SL/log/munged.log" "$SL/log/munged.err" >&2 2>/dev/null
        return 1
    fi
    /usr/sbin/slurmctld -D -i -f "$SL/slurm.conf" 2>>"$SL/log/slurmctld.err" &
    SL_PIDS="$SL_PIDS $!"
    if ! slurm_poll 60 sh -c 'scontrol ping | grep -q "is UP"'; then
        echo "slurm: slurmctld did not answer scontrol ping in 60 s" >&2
        tail -n 30 "$SL/log/slurmctld.log" "$SL/log/slurmctld.err" >&2 2>/dev/null
        return 1
    fi
    /usr/sbin/slurmd -D -f "$SL/slurm.conf" -N "$SL_HOST" 2>>"$SL/log/slurmd.err" &
    SL_PIDS="$SL_PIDS $!"
    if ! slurm_poll 90 sh -c "sinfo -h -N -n '$SL_HOST' -o %t | grep -Eq '^(idle|mix|alloc)'"; then
        echo "slurm: node $SL_HOST not idle in 90 s: $(sinfo -h -N -o '%N %t %E' 2>&1)" >&2
        tail -n 30 "$SL/log/slurmd.log" "$SL/log/slurmd.err" "$SL/log/slurmctld.log" >&2 2>/dev/null
        return 1
    fi
    return 0
}

# slurm_stop: end the daemons started by slurm_start (TERM, then KILL after a bounded wait).
slurm_stop() {
    for p in $SL_PIDS; do kill -TERM "$p" 2>/dev/null; done
    for p in $SL_PIDS; do
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        kill -KILL "$p" 2>/dev/null
    done
    SL_PIDS=""
}

# slurm_job_state ID: the job's state (RUNNING, COMPLETED, ...), "" when unknown.
slurm_job_state() {
    scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1
}
