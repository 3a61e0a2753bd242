# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A small CephFS for the emulated cluster (`./h5stack cluster start --fs cephfs`): a real
coherent, striped, networked file system where its nodes write shared files.

On this machine, on the cluster's bridge address: one monitor, one manager, one metadata
server and OSDS object stores (BlueStore on files of OSD_SIZE under the cluster's
directory, each object kept REPLICAS times: one OSD may die and the data is still
served), started from Debian's Ceph (requirements/debian-cephfs.txt) with
site-configs/slurm-cluster/ceph.conf.in. Each node mounts the file system with ceph-fuse
inside its own namespaces (a client of its own, `client.<node>`, whose capabilities
the metadata server revokes when several nodes write one file, as Lustre's locks and
GPFS's tokens do). State, logs and the configuration: $H5STACK_HOME/cluster/ceph/.
"""

import contextlib
import json
import os
import shutil
import subprocess
import time
import uuid

from h5stack.base import paths
from h5stack.base.ui import StepError, info, tail
from h5stack.machine import fusemounts, processes, slurm

TEMPLATE = os.path.join(paths.SITE_CONFIGS, "slurm-cluster", "ceph.conf.in")
REQUIREMENTS = os.path.join(os.path.dirname(paths.DEBIAN_REQUIREMENTS), "debian-cephfs.txt")
PROGRAMS = ["ceph-mon", "ceph-osd", "ceph-mds", "ceph-mgr", "ceph-fuse", "ceph", "monmaptool", "setfattr"]
OSDS, REPLICAS, OSD_SIZE, OSD_MEMORY = 3, 2, 2 << 30, 896 << 20
MON_PORT = 3300
#: seconds a mount waits for the metadata server (mds_beacon_grace of ceph.conf.in, and more)
MOUNT_TIMEOUT = 90
FS_NAME = "cephfs"
#: seconds without a renewal after which the metadata server calls a client's session
#: stale and gives its capabilities to others (Ceph's default 60): a node that dies holds
#: its files for this long (clients renew every third of it)
SESSION_TIMEOUT = 30
MGR_POOL = "device_health_metrics"  # the manager's device-health pool (Ceph 16's name)
NAME = "CephFS"
FSTYPE = "fuse.ceph-fuse"
DAEMONS = ["mon.a", "mgr.x", "mds.a"] + [f"osd.{i}" for i in range(OSDS)]


def ceph_dir():
    return paths.sub("cluster", "ceph")


def conf():
    return os.path.join(ceph_dir(), "ceph.conf")


def ceph(*args, timeout=60, check=True):
    """The ceph command on this file system's configuration; its stdout."""
    return fusemounts.command(["ceph", "-c", conf(), *args], timeout, check)


def check_programs():
    fusemounts.ensure_programs("CephFS", REQUIREMENTS, PROGRAMS)


def daemon_pid(name):
    return slurm.pid_alive(ceph_dir(), name)


def _run(cmd, what):
    """Run a start command (a daemon forks off; its own session: the end of the command that
    started it, or a signal to that one's process group, does not end it)."""
    proc = subprocess.run(cmd, capture_output=True, text=True, start_new_session=True)
    if proc.returncode != 0:
        log = os.path.join(ceph_dir(), "log", f"{what}.log")
        raise StepError(
            f"CephFS: `{' '.join(cmd)}` failed (exit {proc.returncode}): {proc.stderr.strip()}\n"
            f"{log}:\n{tail(log, 15) or '(no log)'}"
        )
    return proc.stdout


def write_config(mon_addr, network):
    d = ceph_dir()
    for sub in ("log", "run", "mon", "osd", "mds", "mgr"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    fsid_file = os.path.join(d, "fsid")
    if not os.path.exists(fsid_file):
        slurm.write_file(fsid_file, str(uuid.uuid4()) + "\n")
    values = {
        "fsid": open(fsid_file).read().strip(),
        "mon_addr": mon_addr,
        "mon_port": MON_PORT,
        "network": network,
        "dir": d,
        "osds": OSDS,
        "replicas": REPLICAS,
        "osd_size": OSD_SIZE,
        "osd_memory": OSD_MEMORY,
    }
    slurm.write_file(conf(), slurm.fill(TEMPLATE, values))
    return values


def start_mon(values):
    d = ceph_dir()
    if not os.path.isdir(os.path.join(d, "mon", "mon.a", "store.db")):
        monmap = os.path.join(d, "monmap")
        _run(["monmaptool", "--create", "--clobber", "--fsid", values["fsid"], "--addv", "a",
              f"[v2:{values['mon_addr']}:{MON_PORT}]", monmap], "mon.a")  # fmt: skip
        _run(["ceph-mon", "-c", conf(), "--mkfs", "-i", "a", "--monmap", monmap], "mon.a")
    if not daemon_pid("mon.a"):
        _run(["ceph-mon", "-c", conf(), "-i", "a"], "mon.a")


def start_osds():
    d = ceph_dir()
    for i in range(OSDS):
        data = os.path.join(d, "osd", f"osd.{i}")
        if not os.path.exists(os.path.join(data, "type")):  # a new OSD: its id from the monitor, then mkfs
            shutil.rmtree(data, ignore_errors=True)
            os.makedirs(data)
            osd_uuid = str(uuid.uuid4())
            given = ceph("osd", "new", osd_uuid).strip()
            if given != str(i):
                raise StepError(
                    f"CephFS: the monitor gave OSD id {given}, expected {i}: `./h5stack cluster stop --wipe`"
                )
            _run(["ceph-osd", "-c", conf(), "-i", str(i), "--mkfs", "--osd-uuid", osd_uuid], f"osd.{i}")
        if not daemon_pid(f"osd.{i}"):
            _run(["ceph-osd", "-c", conf(), "-i", str(i)], f"osd.{i}")


def start_mds_mgr():
    for name, program in (("mgr.x", "ceph-mgr"), ("mds.a", "ceph-mds")):
        os.makedirs(os.path.join(ceph_dir(), name.split(".")[0], name), exist_ok=True)
        if not daemon_pid(name):
            _run([program, "-c", conf(), "-i", name.split(".")[1]], name)


def ensure_fs():
    names = [fs["name"] for fs in json.loads(ceph("fs", "ls", "--format", "json"))]
    if FS_NAME not in names:
        make_fs()
    ceph("fs", "set", FS_NAME, "session_timeout", str(SESSION_TIMEOUT))


def make_fs():
    pools = ceph("osd", "pool", "ls").split()
    # the manager's pool too (it makes it after its start otherwise, and the start would
    # return while that pool's placement group is still being created)
    for pool, pgs in (("cephfs_metadata", "16"), ("cephfs_data", "32"), (MGR_POOL, "1")):
        if pool not in pools:
            ceph("osd", "pool", "create", pool, pgs)
    ceph("osd", "pool", "application", "enable", MGR_POOL, "mgr_devicehealth")
    ceph("fs", "new", FS_NAME, "cephfs_metadata", "cephfs_data")


def wait_healthy(timeout):
    """Wait for every OSD up and in, the MDS active and every placement group active."""
    t0, state = time.monotonic(), {}
    while time.monotonic() - t0 < timeout:
        state = health()
        if state["osds_up"] == OSDS and state["mds"] == "up:active" and state["pgs_active"]:
            return time.monotonic() - t0
        time.sleep(1)
    raise StepError(
        f"CephFS not ready after {timeout} s: {state}\n{tail(os.path.join(ceph_dir(), 'log', 'mon.a.log'), 10)}"
    )


def health():
    """{health, osds_up, mds, pgs_active, pgs} of the running Ceph (empty values if it does not answer)."""
    if not os.path.exists(conf()) or not daemon_pid("mon.a"):
        return {"health": "not running", "osds_up": 0, "mds": "", "pgs_active": False, "pgs": 0}
    try:
        status = json.loads(ceph("status", "--format", "json", "--connect-timeout", "10", timeout=20))
    except (StepError, OSError, subprocess.TimeoutExpired, ValueError):
        return {"health": "not answering", "osds_up": 0, "mds": "", "pgs_active": False, "pgs": 0}
    osdmap = status.get("osdmap", {})
    osdmap = osdmap.get("osdmap", osdmap)  # nested in older releases
    pgmap = status.get("pgmap", {})
    by_state = {s["state_name"]: s["count"] for s in pgmap.get("pgs_by_state", [])}
    mds = [s["status"] for s in status.get("fsmap", {}).get("by_rank", [])]
    total = pgmap.get("num_pgs", 0)
    active = sum(n for name, n in by_state.items() if name.startswith("active"))
    return {
        "health": status.get("health", {}).get("status", "?"),
        "osds_up": osdmap.get("num_up_osds", 0),
        "mds": mds[0] if mds else "",
        "pgs_active": total > 0 and active == total,
        "pgs": total,
    }


def start(address, network, timeout=180):
    """Start what is not running of the file system, its daemons on address for the clients
    of network; the seconds it took to be ready."""
    check_programs()
    t0 = time.monotonic()
    values = write_config(address, network)
    start_mon(values)
    start_osds()
    start_mds_mgr()
    ensure_fs()
    wait_healthy(timeout)
    seconds = time.monotonic() - t0
    info(f"CephFS ready in {seconds:.1f} s: {OSDS} OSDs of {OSD_SIZE >> 30} GiB, {REPLICAS} copies; {conf()}")
    return seconds


def mount(client, node_pid, mountpoint):
    """Mount the file system at mountpoint inside the node's namespaces (node_pid None:
    here) with ceph-fuse as client.<client>, its log and socket under the cluster's
    directory. A mount the node's namespace copied from this machine's at its start (the
    same client as here) is taken off first: every node is a client of its own."""
    os.makedirs(mountpoint, exist_ok=True)
    if node_pid:
        subprocess.run(fusemounts.inside(node_pid) + ["umount", "-l", mountpoint], capture_output=True)
    cmd = fusemounts.inside(node_pid) + ["ceph-fuse", "-c", conf(), "--id", client]
    cmd += [f"--log_file={ceph_dir()}/log/client.{client}.log", f"--admin_socket={ceph_dir()}/run/client.{client}.asok"]
    cmd += ["-o", "allow_other", mountpoint]
    # after a restart the monitor may still name the metadata server of the last run as
    # active, until its beacon grace ends: "probably no MDS server is up?"; try again then
    t0 = time.monotonic()
    while True:
        try:
            return _run(cmd, f"client.{client}")
        except StepError as e:
            if "no MDS server is up" not in str(e) or time.monotonic() - t0 > MOUNT_TIMEOUT:
                raise
            time.sleep(3)


def down():
    """Is a part of the file system down? A daemon whose process is gone counts as down
    before the monitor says so (the metadata server stays "up:active" for its beacon grace
    after a crash)."""
    h = health()
    return h["mds"] != "up:active" or h["osds_up"] < OSDS or any(not daemon_pid(name) for name in DAEMONS)


def status():
    """One line on the file system for `./h5stack cluster status`; and whether it is up."""
    h = health()
    line = (f"cephfs: {h['health']}, {h['osds_up']}/{OSDS} OSDs up, mds {h['mds'] or 'down'}, {h['pgs']} pgs"
            f"{' active' if h['pgs_active'] else ' not all active'}; {conf()}")  # fmt: skip
    return line, h["mds"] == "up:active"


def unmount_here(mountpoint):
    """Take this machine's client off (before its daemons stop) and end its process, which
    a lazy unmount leaves running; True if one was mounted."""
    if fusemounts.mounted(None, mountpoint) != FSTYPE:
        return False
    conn = fusemounts.connection(None, mountpoint)
    if not fusemounts.answers(mountpoint):  # a hung client would hold the unmount too
        fusemounts.abort(conn)
    if subprocess.run(["umount", mountpoint], capture_output=True).returncode != 0:  # the client then flushes and ends
        subprocess.run(["umount", "-l", mountpoint], capture_output=True)  # in use, or a dead client: lazily
    # its data flushed while the daemons still run; a client that hangs (perhaps inside the
    # kernel) is killed, its connection aborted first
    processes.end([daemon_pid("client.host")], 10, before_kill=lambda: fusemounts.abort(conn))
    return True


def stop(timeout=30):
    """Stop every daemon (SIGTERM, then SIGKILL); the names of those that ran."""
    pids = {name: daemon_pid(name) for name in reversed(DAEMONS)}
    stopped = [name for name, pid in pids.items() if pid]
    left = processes.end([pids[n] for n in stopped], timeout)
    for name in (n for n in stopped if pids[n] not in left):  # a killed daemon leaves its pid file
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(ceph_dir(), "run", f"{name}.pid"))
    return stopped


def wipe():
    """Remove the file system's state (its OSDs' data included)."""
    if any(daemon_pid(n) for n in DAEMONS):
        raise StepError("CephFS is running: `./h5stack cluster stop` first")
    shutil.rmtree(ceph_dir(), ignore_errors=True)
