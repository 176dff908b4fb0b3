#!/usr/bin/env bash
# Start/stop a throw-away single-node Slurm cluster on localhost, for tests.
#
#   bash scripts/slurm-local.sh start DIR   # prints: export SLURM_CONF=DIR/slurm.conf
#   bash scripts/slurm-local.sh stop DIR    # idempotent
#
# Typical use in a test:
#   eval "$(bash scripts/slurm-local.sh start "$tmp/slurm")" || exit $?
#   trap 'bash scripts/slurm-local.sh stop "$tmp/slurm"' EXIT
#   sbatch --wait --array=0-3 --wrap '...'
#
# Everything (munge key + socket, slurm.conf, state, spool, logs, pid files)
# lives under DIR, so nothing in /etc or /run is touched and several clusters
# can run side by side with different DIRs.  The client commands need only
# SLURM_CONF: slurm.conf's AuthInfo points them at the private munge socket.
#
# Needs (Debian): slurm-wlm munge  (apt-get install --no-install-recommends).
# Exit codes: 0 ok, 1 failure (one line on stderr + log tail), 77 = Slurm or
# munge not installed (lets a test report "skipped"), 2 = usage error.
set -euo pipefail

# Slurm puts daemons and tools in sbin on Debian; a non-login PATH may lack it.
PATH="$PATH:/usr/sbin:/sbin"

usage() {
  echo "usage: $0 start|stop DIR" >&2
  exit 2
}

[[ $# -eq 2 ]] || usage
cmd=$1
# slurm.conf cannot quote paths, so whitespace in DIR would break it silently.
case $2 in
  *[[:space:]]*) echo "slurm-local: DIR must not contain whitespace: '$2'" >&2; exit 2 ;;
  "") usage ;;
esac
# Nothing to stop in a DIR that was never created.
[[ $cmd == stop && ! -d $2 ]] && exit 0
mkdir -p "$2"
DIR=$(cd "$2" && pwd -P)

# Where the sockets live.  AF_UNIX paths are limited to 108 bytes and
# slurmstepd adds "<node>_<job>.<step>" to the spool dir, so a deep DIR (CI
# build trees) gets a short private directory under /tmp instead, recorded
# in DIR/run.path so that stop can remove it.
run_dir() {
  if [[ -f $DIR/run.path ]]; then
    cat "$DIR/run.path"
  elif (( ${#DIR} <= 60 )); then
    echo "$DIR/run"
  else
    mktemp -d /tmp/slurm-local.XXXXXX
  fi
}

pid_alive() {
  [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null
}

# Stop a daemon from its pid file: TERM, then KILL if it lingers.
stop_pidfile() {
  local pidfile=$1 pid i
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if pid_alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      pid_alive "$pid" || break
      sleep 0.1
    done
    if pid_alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$pidfile"
}

do_stop() {
  local conf=$DIR/slurm.conf i
  # Cancel jobs first so that slurmd/slurmstepd kill the job processes;
  # stopping slurmd alone would leave running jobs behind.
  if [[ -f $conf && -f $DIR/pids/slurmctld.pid ]] && pid_alive "$(cat "$DIR/pids/slurmctld.pid")"; then
    if [[ -n $(SLURM_CONF=$conf timeout 5 squeue -h -o %i 2>/dev/null || true) ]]; then
      SLURM_CONF=$conf timeout 5 scancel --quiet --user="$(id -un)" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        [[ -z $(SLURM_CONF=$conf timeout 5 squeue -h -o %i 2>/dev/null || true) ]] && break
        sleep 0.2
      done
    fi
  fi
  stop_pidfile "$DIR/pids/slurmd.pid"
  stop_pidfile "$DIR/pids/slurmctld.pid"
  # Last resort for anything the cancel did not reach: slurmstepd and job
  # processes of this cluster carry our marker or SLURM_CONF + SLURM_JOB_ID.
  local p env
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $p == "$$" ]] && continue
    env=$(tr '\0' '\n' 2>/dev/null <"/proc/$p/environ") || continue
    if grep -qxF "SLURM_LOCAL_DIR=$DIR" <<<"$env" ||
       { grep -qxF "SLURM_CONF=$conf" <<<"$env" && grep -q '^SLURM_JOB_ID=' <<<"$env"; }; then
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
  stop_pidfile "$DIR/pids/munged.pid"
  if [[ -f $DIR/run.path ]]; then
    local rd
    rd=$(cat "$DIR/run.path")
    [[ $rd == /tmp/slurm-local.* ]] && rm -rf "$rd"
    rm -f "$DIR/run.path"
  fi
}

# Report a failed start: what failed, the log tail, then undo the start.
fail() {
  local what=$1 log=${2:-}
  echo "slurm-local: $what failed${log:+ (log: $log)}" >&2
  if [[ -n $log && -f $log ]]; then
    tail -n 20 "$log" | sed 's/^/  | /' >&2
  fi
  do_stop >/dev/null 2>&1 || true
  exit 1
}

# Two free TCP ports, held open together so they are distinct.  There is a
# small race until the daemons bind them, acceptable for tests.
pick_ports() {
  if command -v python3 >/dev/null 2>&1; then
    python3 - <<'EOF'
import socket
s = [socket.socket() for _ in range(2)]
for x in s:
    x.bind(("", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))
EOF
  else
    # Derive from DIR so parallel clusters differ, then skip busy ports.
    local base p ports=()
    base=$(( $(cksum <<<"$DIR" | cut -d' ' -f1) % 20000 + 30000 ))
    for ((p = base; ${#ports[@]} < 2 && p < base + 200; p++)); do
      if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then ports+=("$p"); fi
    done
    echo "${ports[@]}"
  fi
}

do_start() {
  local b
  for b in munged slurmctld slurmd sinfo squeue scancel; do
    if ! command -v "$b" >/dev/null 2>&1; then
      echo "slurm-local: '$b' not found; install slurm-wlm and munge to run Slurm tests" >&2
      exit 77
    fi
  done

  # A leftover cluster in DIR (crashed test) would hold ports and pid files.
  do_stop

  local run
  run=$(run_dir)
  [[ $run == "$DIR/run" ]] || echo "$run" >"$DIR/run.path"
  # Fresh state each start: jobs saved by an earlier (crashed) run would
  # otherwise be restored and compete with the new test's jobs.
  rm -rf "$DIR/state" "$DIR/log" "$run/spool"
  mkdir -p "$DIR"/{log,pids,state,munge} "$run/spool"
  # munged refuses keys and sockets in directories others can write to; the
  # socket dir stays traversable so that other local users could submit.
  chmod 0700 "$DIR/munge"
  chmod 0755 "$run"

  local sock=$run/munge.sock
  if [[ ! -s $DIR/munge/munge.key ]]; then
    if command -v mungekey >/dev/null 2>&1; then
      mungekey --create --keyfile="$DIR/munge/munge.key"
    else
      dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
    fi
  fi
  chmod 0600 "$DIR/munge/munge.key"

  # --force: munged is picky about ownership of every parent directory
  # (e.g. a sticky /tmp); the key stays private through the 0700 dir anyway.
  munged --force \
    --key-file="$DIR/munge/munge.key" \
    --socket="$sock" \
    --pid-file="$DIR/pids/munged.pid" \
    --log-file="$DIR/log/munged.log" \
    --seed-file="$DIR/munge/munged.seed" \
    >>"$DIR/log/munged.log" 2>&1 || fail "munged start" "$DIR/log/munged.log"

  local user ports ctld_port slurmd_port host mem_mb ncpu node=localnode
  user=$(id -un)
  read -r ctld_port slurmd_port <<<"$(pick_ports)"
  [[ -n ${slurmd_port:-} ]] || fail "picking free TCP ports"
  host=$(hostname -s 2>/dev/null || hostname)
  ncpu=$(nproc)
  # Modest so that a small CI runner never looks "short of memory".
  mem_mb=$(( $(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo) / 2 ))
  (( mem_mb > 1024 )) && mem_mb=1024

  : >"$DIR/plugstack.conf" # keep /etc/slurm/plugstack.conf.d plugins out

  cat >"$DIR/slurm.conf" <<EOF
# Generated by scripts/slurm-local.sh; a throw-away test cluster.
ClusterName=slurmlocal
# The address is explicit so that nothing depends on how the host name resolves.
SlurmctldHost=${host}(127.0.0.1)
SlurmctldPort=${ctld_port}
SlurmdPort=${slurmd_port}
SlurmUser=${user}
SlurmdUser=${user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${sock}
StateSaveLocation=${DIR}/state
SlurmdSpoolDir=${run}/spool
SlurmctldPidFile=${DIR}/pids/slurmctld.pid
SlurmdPidFile=${DIR}/pids/slurmd.pid
SlurmctldLogFile=${DIR}/log/slurmctld.log
SlurmdLogFile=${DIR}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=${DIR}/plugstack.conf
# No cgroups: containers and CI runners rarely allow them.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
PropagateResourceLimits=NONE
# One CPU per task so that array tasks run side by side.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
# Fast turnaround: finished jobs leave squeue quickly, scancel is quick.
MinJobAge=5
KillWait=30
InactiveLimit=0
MessageTimeout=10
SlurmctldTimeout=30
SlurmdTimeout=30
UnkillableStepTimeout=30
SchedulerType=sched/backfill
# Trust the node line below rather than the hardware probe (containers lie).
SlurmdParameters=config_overrides
NodeName=${node} NodeHostname=${host} NodeAddr=127.0.0.1 CPUs=${ncpu} RealMemory=${mem_mb} State=UNKNOWN
PartitionName=local Nodes=${node} Default=YES MaxTime=INFINITE State=UP
EOF

  # SLURM_LOCAL_DIR is inherited by slurmstepd, letting stop find strays.
  export SLURM_CONF=$DIR/slurm.conf SLURM_LOCAL_DIR=$DIR
  slurmctld >>"$DIR/log/slurmctld.out" 2>&1 || fail "slurmctld start" "$DIR/log/slurmctld.log"
  slurmd -N "$node" >>"$DIR/log/slurmd.out" 2>&1 || fail "slurmd start" "$DIR/log/slurmd.log"
  unset SLURM_LOCAL_DIR

  # Bounded wait for the node to register and become schedulable.
  local i state=""
  for ((i = 0; i < 300; i++)); do
    state=$(timeout 5 sinfo -h -N -n "$node" -o %T 2>/dev/null || true)
    [[ $state == idle ]] && break
    # A daemon that died will never make the node idle; fail fast (after a
    # grace period, as the forked daemons write their pid files late).
    if (( i > 10 )); then
      pid_alive "$(cat "$DIR/pids/slurmctld.pid" 2>/dev/null)" ||
        fail "slurmctld (exited)" "$DIR/log/slurmctld.log"
      pid_alive "$(cat "$DIR/pids/slurmd.pid" 2>/dev/null)" ||
        fail "slurmd (exited)" "$DIR/log/slurmd.log"
    fi
    sleep 0.2
  done
  if [[ $state != idle ]]; then
    local log=$DIR/log/slurmd.log
    pid_alive "$(cat "$DIR/pids/slurmctld.pid" 2>/dev/null)" || log=$DIR/log/slurmctld.log
    fail "waiting for node idle (state '${state:-none}' after 60 s)" "$log"
  fi

  echo "export SLURM_CONF=$DIR/slurm.conf"
}

case $cmd in
  start) do_start ;;
  stop) do_stop ;;
  *) usage ;;
esac
