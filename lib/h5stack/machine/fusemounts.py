# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""What the cluster's FUSE file systems (machine/ceph.py, machine/glusterfs.py) share:
running a program inside a node's namespaces, and asking a mount point what is mounted
there and whether it answers."""

import os
import subprocess


def inside(node_pid):
    """The command prefix that runs a program in a node's namespaces (this machine: none)."""
    return ["nsenter", "-t", str(node_pid), "-m", "-n", "-p", "-u", "--"] if node_pid else []


def mounted(node_pid, mountpoint):
    """The file-system type mounted at mountpoint inside the node (node_pid None: here), or ''."""
    proc = subprocess.run(
        inside(node_pid) + ["findmnt", "-n", "-o", "FSTYPE", "-M", mountpoint], capture_output=True, text=True
    )
    return proc.stdout.strip()


def answers(mountpoint):
    """Does the mount at mountpoint answer (a dead FUSE client: "Transport endpoint is not connected")?"""
    try:
        os.statvfs(mountpoint)
        return True
    except OSError:
        return False
