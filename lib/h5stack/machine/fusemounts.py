# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""What the cluster's FUSE file systems (machine/ceph.py, machine/glusterfs.py) share:
their packages and command line, running a program inside a node's namespaces, and
asking a mount point what is mounted there and whether it answers, and aborting the
kernel's connection to a client that hangs."""

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


def answers(mountpoint, node_pid=None, timeout=20):
    """Does the mount at mountpoint (inside the node; None: here) answer within timeout s (a
    dead FUSE client: "Transport endpoint is not connected"; a hung one: no answer)? Asked
    by a child, which a hung client's request cannot hold here."""
    cmd = inside(node_pid) + ["stat", "-f", mountpoint]
    try:
        return subprocess.run(cmd, capture_output=True, timeout=timeout).returncode == 0
    except subprocess.TimeoutExpired:
        return False


#: the kernel's FUSE connections, one directory per mount (fusectl)
CONNECTIONS = "/sys/fs/fuse/connections"


def connection(node_pid, mountpoint):
    """The kernel's FUSE connection of the mount at mountpoint inside the node (node_pid
    None: here): its device number, read from the mount table without touching the mount."""
    with open(f"/proc/{node_pid or 'self'}/mountinfo") as f:
        return connection_in(f, mountpoint)


def connection_in(mountinfo, mountpoint):
    """The FUSE connection (the device's minor number) of mountpoint in the lines of a
    mount table (proc_pid_mountinfo(5)); None where no FUSE file system is mounted there."""
    found = None
    for line in mountinfo:
        fields = line.split()
        fstype = fields[fields.index("-") + 1]
        if fields[4] == mountpoint and fstype.split(".")[0] in ("fuse", "fuseblk"):
            found = int(fields[2].split(":")[1])  # the last mount there is the one seen
    return found


def abort(conn):
    """Abort a FUSE connection: every request of it, and every one to come, fails at once,
    so that a client hung in the kernel can be killed and the mount taken off."""
    if conn is None:
        return False
    if not os.listdir(CONNECTIONS):
        subprocess.run(["mount", "-t", "fusectl", "fusectl", CONNECTIONS], capture_output=True)
    try:
        with open(os.path.join(CONNECTIONS, str(conn), "abort"), "w") as f:
            f.write("1")
        return True
    except OSError:  # the connection ended meanwhile
        return False
