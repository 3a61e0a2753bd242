# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A CPU control group of a tenth of a process's weight: its processes take the CPU time
that the rest of the machine leaves idle, and a tenth of a core where a process of the rest
wants it (so that their time limits, minutes for runs of seconds, still hold), whatever
their session. A `nice` value does not do that
where the kernel groups each session (autogroup scheduling: every session an equal share,
whatever the nice values in it), and a process that starts a session of its own (a
daemon, an MPI launcher) would leave it; a control group holds every descendant.

Made under cgroup v1's `cpu` hierarchy (`cpu.shares` 100 of a process's 1024) or the
unified hierarchy (`cpu.weight` 10 of 100, its `cpu` controller enabled for the root's
children: left enabled); where neither can
be made (not root, no cpu controller, a container's cgroup that may not have children),
`cpu_group` gives None and the caller runs its work another way."""

import contextlib
import glob
import os
import signal
import subprocess
import time

from h5stack.base.ui import info

#: cgroup v1's cpu hierarchy and the unified hierarchy, as Linux mounts them
V1 = "/sys/fs/cgroup/cpu"
V2 = "/sys/fs/cgroup"


def _hierarchy():
    """(the directory a group is made in, its weight file, a tenth of a process's weight), or None."""
    if os.path.isfile(os.path.join(V1, "cpu.shares")):
        return V1, "cpu.shares", "100"
    try:
        with open(os.path.join(V2, "cgroup.controllers")) as f:
            if "cpu" not in f.read().split():
                return None
        with open(os.path.join(V2, "cgroup.subtree_control")) as f:
            enabled = "cpu" in f.read().split()
        if not enabled:
            with open(os.path.join(V2, "cgroup.subtree_control"), "w") as f:
                f.write("+cpu")
    except OSError:
        return None
    return V2, "cpu.weight", "10"


@contextlib.contextmanager
def cpu_group(name):
    """A control group of a tenth of a process's CPU weight (its directory) for the
    with-block, removed at its end; None where none can be made."""
    found = _hierarchy()
    if found is None:
        yield None
        return
    parent, weight_file, lowest = found
    for stale in glob.glob(os.path.join(parent, f"{name}-*")):  # of a run that was killed, once empty
        pid = os.path.basename(stale).rpartition("-")[2]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            with contextlib.suppress(OSError):
                os.rmdir(stale)
    path = os.path.join(parent, f"{name}-{os.getpid()}")
    try:
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, weight_file), "w") as f:
            f.write(lowest)
        probe = subprocess.run(command_in(path, ["true"]), capture_output=True, text=True)
        if probe.returncode != 0:
            raise OSError(0, probe.stderr.strip() or "a process cannot be moved into it")
    except OSError as e:
        info(f"no CPU group of a low weight ({path}: {e.strerror})")
        with contextlib.suppress(OSError):
            os.rmdir(path)
        yield None
        return
    try:
        yield path
    finally:
        try:
            os.rmdir(path)
        except OSError as e:
            info(f"{path}: left as it is ({e.strerror}: a process of it still runs)")


def command_in(group, cmd):
    """cmd, started inside the group: a shell moves itself into it, then becomes cmd (every
    process cmd starts is born inside)."""
    return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', group, *cmd]


def kill_all(group, tries=50):
    """SIGKILL every process of the group until none is left (a process that forks meanwhile
    is met the next time round); how many were killed."""
    killed = set()
    for _ in range(tries):
        try:
            with open(os.path.join(group, "cgroup.procs")) as f:
                pids = [int(p) for p in f.read().split()]
        except FileNotFoundError:  # removed: nothing in it
            break
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed.update(pids)
        time.sleep(0.1)
    return len(killed)
