#!/usr/bin/env bash
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# node.sh NAME NODEDIR HOSTS SHARED...: the first process of an emulated compute node.
# `./h5stack cluster start` runs it as PID 1 of the node's new namespaces (network, UTS,
# mount, IPC, PID, time) and then plugs the node's veth into the cluster's bridge.
# Here: the node's hostname, boot id and machine id; private /tmp, /dev/shm and /var/spool/slurmd; the cluster's
# /etc/hosts; the directories in SHARED (the checkout, $H5STACK_HOME: a cluster's software
# tree and parallel file system) seen at the same paths as on this machine, also where they
# lie under /tmp. Then the node waits for its network and runs slurmd until it is stopped
# (SIGTERM) or killed.
set -euo pipefail
name=$1 nodedir=$2 hosts=$3
shift 3
hostname "$name"
# a machine of its own: its own boot and machine ids (UCX, in MPICH, takes processes with
# the same boot id for one machine and joins them by shared memory, which nodes do not share)
cat /proc/sys/kernel/random/uuid > "$nodedir/boot_id"
tr -d - < "$nodedir/boot_id" > "$nodedir/machine-id"
mount --bind "$nodedir/boot_id" /proc/sys/kernel/random/boot_id
[[ -e /etc/machine-id ]] && mount --bind "$nodedir/machine-id" /etc/machine-id
mount --bind "$hosts" /etc/hosts
mkdir -p "$nodedir/spool" /var/spool/slurmd
mount --bind "$nodedir/spool" /var/spool/slurmd
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
hosttmp=/run/h5stack-host-tmp # a mount point on this node only
mkdir -p "$hosttmp"
mount --rbind /tmp "$hosttmp"
mount -t tmpfs -o mode=1777 tmpfs /tmp
for dir in "$@"; do
    case $dir in
    /tmp/*) mkdir -p "$dir" && mount --rbind "$hosttmp/${dir#/tmp/}" "$dir" ;;
    esac
done
for _ in $(seq 600); do # the network comes from outside: ./h5stack cluster start
    ip -4 -o addr show dev eth0 2>/dev/null | grep -q inet && break
    sleep 0.1
done
ip -4 -o addr show dev eth0 | grep -q inet || { echo "node.sh: $name: no network after 60 s" >&2; exit 1; }
trap 'kill -TERM "$slurmd" 2>/dev/null' TERM
slurmd -D -N "$name" &
slurmd=$!
# PID 1 of the node: reaps the node's orphans, and ends (ending the node) when slurmd does
while kill -0 "$slurmd" 2>/dev/null; do wait || true; done
