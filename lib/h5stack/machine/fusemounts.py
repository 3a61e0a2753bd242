# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""What the cluster's FUSE file systems (machine/ceph.py, machine/glusterfs.py) share:
their packages and command line, running a program inside a node's namespaces, and
asking a mount point what is mounted there and whether it answers."""

import os
import shutil
import subprocess

from h5stack.base.ui import StepError
from h5stack.machine import apt


def ensure_programs(fs_name, requirements, programs):
    """Install the file system's Debian packages where missing; a program still missing is an error."""
    apt.ensure_packages(requirements)
    missing = [p for p in programs if not shutil.which(p)]
    if missing:
        raise StepError(
            f"{fs_name}: programs missing: {', '.join(missing)} (requirements/{os.path.basename(requirements)})"
        )


def command(argv, timeout, check=True):
    """The stdout of a file system's command line tool; with check, a failure is an error
    with the tool's own message."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise StepError(f"`{' '.join(argv)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


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
