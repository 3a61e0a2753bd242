# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Ending the processes the machine's services run (Slurm's daemons, the cluster's nodes,
the Ceph and GlusterFS daemons and their FUSE clients): SIGTERM, a bounded wait, then
SIGKILL, in one place."""

import os
import signal
import time


def alive(pid):
    """Whether the process runs and may be signalled by us (a zombie, which its parent has
    not reaped, does not run; another user's process is not ours)."""
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def wait_gone(pids, timeout, poll=0.2):
    """Wait up to timeout seconds for pids to end; those still running."""
    t0 = time.monotonic()
    while any(alive(p) for p in pids) and time.monotonic() - t0 < timeout:
        time.sleep(poll)
    return [p for p in pids if alive(p)]


def _signal(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:  # ended in between: no error
            pass
        except PermissionError:  # not ours (a pid reused by another user's process)
            pass


def end(pids, timeout, before_kill=None, first=signal.SIGTERM):
    """The signal `first` (SIGTERM; None: they have had one) to each of pids; SIGKILL to
    those still running after timeout seconds, before_kill() called first (a FUSE client
    hung inside the kernel dies only once its connection is aborted); those that outlive
    the SIGKILL by timeout seconds more."""
    pids = sorted({p for p in pids if p and p > 0})  # never 0 or -1: a group, or every process
    if first:
        _signal(pids, first)
    left = wait_gone(pids, timeout)
    if not left:
        return []
    if before_kill:
        before_kill()
    _signal(left, signal.SIGKILL)
    return wait_gone(left, timeout)
