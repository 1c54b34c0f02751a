#!/usr/bin/env bash
# Starts a single-node Slurm cluster (slurmctld + slurmd + munge) in a folder,
# without systemd, for testing `grid run --executor slurm` against a real
# Slurm. Needs root and Debian's packages:
#
#   apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge
#   scripts/slurm_single_node.sh start DIR   # prints: export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm_single_node.sh stop DIR
#
# The node offers every CPU of this machine and two fake GPUs (gres), enough
# to check that model steps ask for `--gres=gpu:1` and get CUDA_VISIBLE_DEVICES.
# Facts behind each key: ../shared/NOTES-slurm.md.
set -euo pipefail

action="${1:?usage: $0 start|stop DIR}"
dir="$(mkdir -p "${2:?usage: $0 start|stop DIR}" && cd "$2" && pwd)"
export SLURM_CONF="$dir/slurm.conf"

stop() {
    local pids=()
    for file in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
        [ -f "$file" ] && pids+=("$(cat "$file")")
    done
    [ ${#pids[@]} -eq 0 ] && return 0
    kill "${pids[@]}" 2>/dev/null || true
    # The daemons take a few seconds to exit; a restart must not meet them.
    for _ in $(seq 1 40); do
        kill -0 "${pids[@]}" 2>/dev/null || break
        sleep 0.25
    done
    rm -f "$dir/slurmd.pid" "$dir/slurmctld.pid"
}

if [ "$action" = stop ]; then
    stop
    exit 0
fi
[ "$action" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

# munge: the package generated its key; only its run folder is missing.
install -d -o munge -g munge -m 0755 /run/munge
# A credential round trip tells whether munged runs (procps may not be
# installed). A socket alone does not: a machine restored from a snapshot keeps
# /run/munge with the socket of a munged that is gone ("Connection refused").
munge_works() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
if ! munge_works; then
    rm -f /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock /run/munge/munged.pid
    runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 1 20); do munge_works && break; sleep 0.25; done
    if ! munge_works; then
        echo "munged did not start; its log: /var/log/munge/munged.log" >&2
        tail -n 20 /var/log/munge/munged.log >&2 || true
        exit 1
    fi
fi

mkdir -p "$dir/state" "$dir/spool" "$dir/dev"
# Any character device will do for a scheduling-only GPU.
for n in 0 1; do
    [ -e "$dir/dev/nv$n" ] || mknod "$dir/dev/nv$n" c 1 3
done
memory_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))
cat > "$dir/slurm.conf" <<CONF
ClusterName=grid-ci
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
DependencyParameters=kill_invalid_depend
ReturnToService=2
GresTypes=gpu
NodeName=localhost NodeHostname=$(cat /proc/sys/kernel/hostname) NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$memory_mb Gres=gpu:2 State=UNKNOWN
PartitionName=main Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
cat > "$dir/gres.conf" <<CONF
AutoDetect=off
NodeName=localhost Name=gpu File=$dir/dev/nv0
NodeName=localhost Name=gpu File=$dir/dev/nv1
CONF

stop
slurmctld -c
slurmd -N localhost
for _ in $(seq 1 60); do
    if [ "$(sinfo -h -o %t 2>/dev/null)" = idle ]; then
        echo "export SLURM_CONF=$SLURM_CONF"
        exit 0
    fi
    sleep 0.5
done
echo "slurm did not become idle; logs: $dir/slurmctld.log $dir/slurmd.log" >&2
sinfo >&2 || true
exit 1
