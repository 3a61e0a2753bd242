# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A small GlusterFS for the emulated cluster (`./h5stack cluster start --fs glusterfs`):
a real networked file system whose clients see each other's writes at once, where the
cluster's CephFS clients do not (docs/regression.md).

On this machine, on the cluster's bridge address: glusterd and BRICKS bricks of one
distributed volume (whole files spread over the bricks by a hash of their names; no
striping) under $H5STACK_HOME/cluster/gluster/, from Debian's GlusterFS
(requirements/debian-glusterfs.txt). Each node mounts it with its own FUSE client inside
its namespaces. Coherence is what the configuration buys: the volume runs without the
client-side translators that cache or delay data and metadata (VOLUME_OPTIONS) and the
clients mount with direct I/O and no kernel attribute or entry cache (MOUNT_OPTIONS), so
every read and stat goes to the bricks. glusterd's socket, the bricks' pid files and their
logs stay where Debian's GlusterFS puts them (/var/run/gluster, /var/log/glusterfs).
"""

import os
import re
import shutil
import subprocess
import time
from xml.etree import ElementTree

from h5stack.base import paths
from h5stack.base.ui import StepError, info, tail
from h5stack.machine import fusemounts, processes

REQUIREMENTS = os.path.join(os.path.dirname(paths.DEBIAN_REQUIREMENTS), "debian-glusterfs.txt")
PROGRAMS = ["glusterd", "gluster", "glusterfs", "pgrep"]
NAME = "GlusterFS"
FSTYPE = "fuse.glusterfs"
VOLUME, BRICKS = "h5scratch", 3
#: translators that would let a client serve old data or old sizes: all off
VOLUME_OPTIONS = [
    f"performance.{t}"
    for t in ("write-behind", "stat-prefetch", "quick-read", "open-behind", "io-cache", "read-ahead", "readdir-ahead")
]
#: no kernel page cache (direct I/O) and no kernel attribute or entry cache
MOUNT_OPTIONS = ["--direct-io-mode=enable", "--attribute-timeout=0", "--entry-timeout=0"]
DEBIAN_VOLFILE = "/etc/glusterfs/glusterd.vol"


def gluster_dir():
    return paths.sub("cluster", "gluster")  # beside the mount point, cluster/glusterfs


def gluster(*args, timeout=120, check=True):
    """The gluster command (on the local glusterd); its stdout."""
    return fusemounts.command(["gluster", "--mode=script", *args], timeout, check)


def check_programs():
    fusemounts.ensure_programs("GlusterFS", REQUIREMENTS, PROGRAMS)


def _pid_of(pattern):
    proc = subprocess.run(["pgrep", "-f", "--", pattern], capture_output=True, text=True)
    return [int(p) for p in proc.stdout.split()]


def glusterd_pid():
    """Our glusterd's pid, or None."""
    found = _pid_of(f"^glusterd -f {re.escape(os.path.join(gluster_dir(), 'glusterd.vol'))}")
    return found[0] if found else None


def brick_pids():
    return _pid_of(f"--brick-name {re.escape(os.path.join(gluster_dir(), 'bricks'))}/")


def start_glusterd():
    """glusterd with its state under the cluster's directory (Debian's volfile, another
    working directory); another glusterd of this machine is an error, not a takeover."""
    if glusterd_pid():
        return
    others = _pid_of("^(/usr/sbin/)?glusterd( |$)")
    if others:
        raise StepError(f"another glusterd runs on this machine (pid {others[0]}): stop it first")
    d = gluster_dir()
    for sub in ("state", "log", "run", "bricks"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    try:
        with open(DEBIAN_VOLFILE) as f:
            text, found = re.subn(r"(option working-directory )\S+", lambda m: f"{m[1]}{d}/state", f.read())
    except OSError as e:
        raise StepError(f"{DEBIAN_VOLFILE}: {e.strerror} (Debian's glusterfs-server installs it)") from None
    if found != 1:
        raise StepError(f"{DEBIAN_VOLFILE}: no `option working-directory` line to point at {d}/state")
    with open(os.path.join(d, "glusterd.vol"), "w") as f:
        f.write(text)
    log = os.path.join(d, "log", "glusterd.log")
    cmd = ["glusterd", "-f", os.path.join(d, "glusterd.vol"), "-p", os.path.join(d, "run", "glusterd.pid"), "-l", log]
    if subprocess.run(cmd, capture_output=True, text=True).returncode != 0:
        raise StepError(f"glusterd did not start; its log {log}:\n{tail(log)}")
    t0 = time.monotonic()
    while not answers():
        if time.monotonic() - t0 > 30:
            raise StepError(f"glusterd does not answer after 30 s; its log {log}:\n{tail(log)}")
        time.sleep(0.5)


def answers():
    """Does our glusterd answer the command line?"""
    try:
        proc = subprocess.run(["gluster", "--mode=script", "volume", "list"], capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0


def ensure_volume(address):
    """The volume: created on its first start (bricks on address, the bridge's), started."""
    if VOLUME not in gluster("volume", "list"):
        bricks = [os.path.join(gluster_dir(), "bricks", f"b{i}") for i in range(BRICKS)]
        for b in bricks:
            os.makedirs(b, exist_ok=True)
        # force: the bricks are directories of the root file system
        gluster("volume", "create", VOLUME, "transport", "tcp", *[f"{address}:{b}" for b in bricks], "force")
    for option, value in applied_options().items():  # at every start: a set cut short is completed
        if value != "off":
            gluster("volume", "set", VOLUME, option, "off")
    if "Status: Started" not in gluster("volume", "info", VOLUME):
        gluster("volume", "start", VOLUME)


def bricks_online():
    """How many of the volume's bricks are online (0 when glusterd does not answer)."""
    if not glusterd_pid():
        return 0
    try:
        nodes = ElementTree.fromstring(gluster("volume", "status", VOLUME, "--xml", check=False, timeout=30)).iter(
            "node"
        )
    except (ElementTree.ParseError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for n in nodes if n.findtext("status") == "1" and n.findtext("path", "").startswith(gluster_dir()))


def applied_options():
    """{option: value} of VOLUME_OPTIONS as glusterd reports them (the check that they hold)."""
    text = gluster("volume", "get", VOLUME, "all")
    values = dict(line.split(None, 1) for line in text.splitlines() if line.strip() and len(line.split()) >= 2)
    return {o: values.get(o, "?").strip() for o in VOLUME_OPTIONS}


def _server_file():
    return os.path.join(gluster_dir(), "volfile-server")


def start(address, network, timeout=60):
    """Start what is not running of the file system, its bricks on address, which the
    clients reach from network (named in the message: the volume itself lets every client
    that reaches it mount); the seconds it took to be ready."""
    check_programs()
    t0 = time.monotonic()
    start_glusterd()
    ensure_volume(address)
    with open(_server_file(), "w") as f:  # where mount() sends the clients
        f.write(address)
    while bricks_online() < BRICKS:
        if time.monotonic() - t0 > timeout:
            raise StepError(f"GlusterFS: {bricks_online()} of {BRICKS} bricks online after {timeout} s; "
                            f"logs in /var/log/glusterfs/bricks and {gluster_dir()}/log")  # fmt: skip
        time.sleep(0.5)
    wrong = {o: v for o, v in applied_options().items() if v != "off"}
    if wrong:
        raise StepError(f"GlusterFS volume {VOLUME}: options not off: {wrong} (`./h5stack cluster stop --wipe`)")
    seconds = time.monotonic() - t0
    info(f"GlusterFS ready in {seconds:.1f} s: volume {VOLUME}, {BRICKS} bricks on {address} for {network}")
    return seconds


def mount(client, node_pid, mountpoint):
    """Mount the volume at mountpoint inside the node's namespaces (node_pid None: here)
    with a FUSE client of its own (its log and pid file under the cluster's directory); a
    mount the node copied from this machine at its start is taken off first."""
    try:
        with open(_server_file()) as f:
            address = f.read().strip()
    except OSError as e:
        raise StepError(f"GlusterFS: no address of its server ({e}): `./h5stack cluster start --fs glusterfs`") from e
    os.makedirs(mountpoint, exist_ok=True)
    if node_pid:
        subprocess.run(fusemounts.inside(node_pid) + ["umount", "-l", mountpoint], capture_output=True)
    log = os.path.join(gluster_dir(), "log", f"client.{client}.log")
    cmd = fusemounts.inside(node_pid) + [
        "glusterfs",
        f"--volfile-server={address}",
        f"--volfile-id={VOLUME}",
        *MOUNT_OPTIONS,
    ]
    cmd += [f"--log-file={log}", f"--pid-file={os.path.join(gluster_dir(), 'run', f'client.{client}.pid')}"]
    proc = subprocess.run(cmd + [mountpoint], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0 or fusemounts.mounted(node_pid, mountpoint) != FSTYPE:
        raise StepError(f"GlusterFS client.{client}: mount at {mountpoint} failed "
                        f"({proc.stderr.strip() or 'no mount'}); its log {log}:\n{tail(log)}")  # fmt: skip


def down():
    """Is a part of the file system down (a brick offline)?"""
    return bricks_online() < BRICKS


def status():
    """One line on the file system for `./h5stack cluster status`; and whether it is up."""
    online = bricks_online()
    return f"glusterfs: volume {VOLUME}, {online}/{BRICKS} bricks online", online == BRICKS


def unmount_here(mountpoint):
    """Take this machine's client off and end its process (it ends with the unmount; one
    that hangs is killed); True if one was mounted."""
    if fusemounts.mounted(None, mountpoint) != FSTYPE:
        return False
    conn = fusemounts.connection(None, mountpoint)
    if not fusemounts.answers(mountpoint):  # a hung client would hold the unmount too
        fusemounts.abort(conn)
    if subprocess.run(["umount", mountpoint], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", mountpoint], capture_output=True)  # in use, or a dead client
    client = _pid_of(f"--pid-file={re.escape(os.path.join(gluster_dir(), 'run', 'client.host.pid'))}")
    processes.end(client, 10, before_kill=lambda: fusemounts.abort(conn))
    return True


def stop(timeout=20):
    """Stop the bricks and glusterd (SIGTERM, then SIGKILL); the names of those that ran.
    The volume stays started in glusterd's state: the next start brings its bricks back."""
    bricks, daemon = brick_pids(), glusterd_pid()
    processes.end(bricks + [daemon], timeout)
    return (["glusterd"] if daemon else []) + ([f"{len(bricks)} bricks"] if bricks else [])


def wipe():
    """Remove the file system's state (its bricks' data included)."""
    if glusterd_pid() or brick_pids():
        raise StepError("GlusterFS is running: `./h5stack cluster stop` first")
    shutil.rmtree(gluster_dir(), ignore_errors=True)
