# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""An emulated multi-node Slurm cluster on this machine (system `slurm-cluster`):
`./h5stack cluster start|stop|status|shell|kill`.

Each compute node (node01 ... nodeNN) is a set of Linux namespaces made with unshare:
network (a veth pair, <bridge>-nodeNN on this side, into the bridge, h5sbr0 by default;
its own address), UTS (its hostname, in the
/etc/hosts every node sees), mount (private /tmp, /dev/shm, /var/spool/slurmd; the
checkout and $H5STACK_HOME shared, as a cluster's software tree and parallel file system
are), IPC, PID, and time (CLOCK_MONOTONIC and CLOCK_BOOTTIME offset per node). Each runs
its own slurmd of Debian's Slurm (site-configs/slurm-cluster/node.sh); munged and
slurmctld run on this machine on the bridge's address. State, logs and the
configuration (from site-configs/slurm-cluster/slurm.conf.in and mpi.conf) are under
$H5STACK_HOME/cluster/; every Slurm command needs SLURM_CONF (`./h5stack cluster env`).
With `--fs cephfs` (H5STACK_CLUSTER_FS) a CephFS runs beside slurmctld (machine/ceph.py),
with `--fs glusterfs` a GlusterFS (machine/glusterfs.py), and every node mounts it at
$H5STACK_HOME/cluster/<fs>: the partition's scratch.
"""

import getpass
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import time

from h5stack.base import paths, settings
from h5stack.base.ui import StepError, info, tail
from h5stack.machine import ceph, fusemounts, glusterfs, processes, slurm

HERE = os.path.join(paths.SITE_CONFIGS, "slurm-cluster")
TEMPLATE = os.path.join(HERE, "slurm.conf.in")
#: Slurm's MPI plugins (PMIx fences that wait for every node): slurmd reads it beside slurm.conf
MPI_CONF = os.path.join(HERE, "mpi.conf")
NODE_SCRIPT = os.path.join(HERE, "node.sh")
BRIDGE = settings.get("H5STACK_CLUSTER_BRIDGE")


def veth_name(node):
    """The host's end of a node's veth pair, named after the bridge: two clusters with
    bridges of their own (H5STACK_CLUSTER_BRIDGE) never take each other's interfaces."""
    name = f"{BRIDGE}-{node}"
    if len(name) > 15:  # IFNAMSIZ - 1
        raise StepError(f"H5STACK_CLUSTER_BRIDGE={BRIDGE!r}: too long for the interface {name!r} (15 characters)")
    return name


#: the cluster's network; the bridge takes its first address, node i the (10 + i)-th
SUBNET = ipaddress.ip_network(settings.get("H5STACK_CLUSTER_SUBNET"))
PROGRAMS = ["unshare", "nsenter", "ip"]
#: the partition's scratch file systems (`--fs`, H5STACK_CLUSTER_FS): this machine's
#: disk, which every node shares, or a networked one that every node mounts: a CephFS
#: (machine/ceph.py) or a GlusterFS (machine/glusterfs.py)
FILE_SYSTEMS = ("local", "cephfs", "glusterfs")
NETWORKED = {"cephfs": ceph, "glusterfs": glusterfs}
UP_STATES = ("idle", "mixed", "allocated", "completing")


def cluster_dir():
    return paths.sub("cluster")


def conf_path():
    return os.path.join(cluster_dir(), "slurm.conf")


def env():
    return dict(os.environ, SLURM_CONF=conf_path())


def node_names(n):
    return [f"node{i:02d}" for i in range(1, n + 1)]


def bridge_address():
    return str(SUBNET.network_address + 1)


def node_address(i):
    """The address of node i (1-based)."""
    return str(SUBNET.network_address + 10 + i)


def clock_offsets(n, step):
    """Node i's clocks run i * step seconds ahead of this machine's: every node differs."""
    return [i * step for i in range(1, n + 1)]


def check_capabilities():
    """What the emulation needs of this machine; a missing capability is named, and the start stops."""
    slurm.check_programs()
    missing = [p for p in PROGRAMS if not slurm.which(p)]
    if missing:
        raise StepError(f"programs missing: {', '.join(missing)} (util-linux, iproute2)")
    if os.geteuid() != 0:
        raise StepError("the emulated cluster needs root (namespaces, a bridge, mounts); run as root")
    if not os.path.exists("/proc/self/ns/time"):
        raise StepError("this kernel has no time namespaces (/proc/self/ns/time): Linux 5.6 or later is needed")
    probe = subprocess.run(
        ["unshare", "--net", "--uts", "--ipc", "--mount", "--pid", "--fork", "--time", "--monotonic", "1", "true"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        raise StepError(f"cannot make the namespaces of a node: unshare: {probe.stderr.strip()}")


def load_layout():
    """The running cluster's layout: {'nodes': [...], 'offsets': [...]} (None: never started)."""
    try:
        with open(os.path.join(cluster_dir(), "layout.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def save_layout(nodes, offsets, fs):
    layout = {"nodes": nodes, "offsets": offsets, "fs": fs}
    slurm.write_file(os.path.join(cluster_dir(), "layout.json"), json.dumps(layout))


def scratch_mountpoint(fs):
    """Where every node mounts a networked file system (the partition's scratch with --fs fs)."""
    return os.path.join(cluster_dir(), fs)


def running_fs():
    """The scratch file system of the cluster as started ('local' when never started)."""
    return (load_layout() or {}).get("fs", "local")


def mount_scratch(fs, names, fresh):
    """Mount the networked file system on each of these nodes where it is not mounted yet
    (on the fresh ones, just started, always: what they copied from here is this machine's
    client), then here (the harness reads what the jobs wrote)."""
    fstype, here = NETWORKED[fs].FSTYPE, scratch_mountpoint(fs)
    for name in names:
        pid = node_pid(name)
        if pid and (name in fresh or fusemounts.mounted(pid, here) != fstype):
            NETWORKED[fs].mount(name, pid, here)
    if fusemounts.mounted(None, here) == fstype and not fusemounts.answers(here):  # its client died
        NETWORKED[fs].unmount_here(here)
    if fusemounts.mounted(None, here) != fstype:
        NETWORKED[fs].mount("host", None, here)


def write_config(nodes, slurmd_timeout):
    d = cluster_dir()
    cpus, memory = os.cpu_count(), int(slurm.memory_mb() * 0.8 / len(nodes))
    lines = [
        f"NodeName={n} NodeAddr={node_address(i)} NodeHostname={n} CPUs={cpus} RealMemory={memory} State=UNKNOWN"
        for i, n in enumerate(nodes, 1)
    ]
    values = {
        "host": socket.gethostname().split(".")[0],
        "ctld_addr": bridge_address(),
        "ctld_port": settings.get("H5STACK_CLUSTER_SLURMCTLD_PORT"),
        "slurmd_port": settings.get("H5STACK_CLUSTER_SLURMD_PORT"),
        "user": getpass.getuser(),
        "dir": d,
        "slurmd_timeout": slurmd_timeout,
        "node_lines": "\n".join(lines),
        "node_list": ",".join(nodes),
    }
    slurm.write_file(conf_path(), slurm.fill(TEMPLATE, values))
    with open(MPI_CONF) as f:
        slurm.write_file(os.path.join(d, "mpi.conf"), f.read())
    hosts = ["127.0.0.1 localhost", f"{bridge_address()} {values['host']}"]
    hosts += [f"{node_address(i)} {n}" for i, n in enumerate(nodes, 1)]
    slurm.write_file(os.path.join(d, "hosts"), "\n".join(hosts) + "\n")


def ip(*args, check=True):
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise StepError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip()}")
    return proc


def ensure_bridge():
    if ip("link", "show", BRIDGE, check=False).returncode != 0:
        ip("link", "add", BRIDGE, "type", "bridge")
        ip("addr", "add", f"{bridge_address()}/{SUBNET.prefixlen}", "dev", BRIDGE)
    ip("link", "set", BRIDGE, "up")


def node_pid(name):
    """The PID (here) of the node's first process, if the node lives."""
    return slurm.pid_alive(os.path.join(cluster_dir(), "nodes", name), "node")


def shared_dirs():
    """What every node sees at the same path as this machine: the checkout, $H5STACK_HOME
    and the directories of H5STACK_CLUSTER_SHARED (colon-separated)."""
    extra = [p for p in settings.get("H5STACK_CLUSTER_SHARED").split(":") if p]
    return [os.path.realpath(p) for p in [paths.ROOT, paths.home(), *extra]]


def start_node(i, name, offset):
    """Start node i (1-based) in namespaces of its own, and plug it into the bridge."""
    nd = os.path.join(cluster_dir(), "nodes", name)
    os.makedirs(os.path.join(nd, "run"), exist_ok=True)
    cmd = ["unshare", "--net", "--uts", "--ipc", "--mount", "--propagation", "private", "--pid", "--fork"]
    cmd += ["--mount-proc", "--time", "--monotonic", str(offset), "--boottime", str(offset), "--kill-child"]
    cmd += [NODE_SCRIPT, name, nd, os.path.join(cluster_dir(), "hosts"), *shared_dirs()]
    with open(os.path.join(cluster_dir(), "log", f"{name}.log"), "ab") as log:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env(), start_new_session=True
        )
    pid = None
    for _ in range(100):  # unshare's child: the node's PID 1
        found = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        if found:
            pid = int(found[0])
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    if pid is None:
        raise StepError(
            f"{name} did not start: {os.path.join(cluster_dir(), 'log', name + '.log')}:\n"
            + (tail(os.path.join(cluster_dir(), "log", f"{name}.log"), 10) or "(no log)\n")
        )
    slurm.write_file(os.path.join(nd, "run", "node.pid"), f"{pid}\n")
    veth = veth_name(name)
    if ip("link", "show", veth, check=False).returncode == 0:  # of the node's last life, not yet gone
        ip("link", "del", veth, check=False)
    ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", str(pid))
    ip("link", "set", veth, "master", BRIDGE, "up")
    inside = ["nsenter", "-t", str(pid), "-n", "ip"]
    for args in (
        ["link", "set", "lo", "up"],
        ["addr", "add", f"{node_address(i)}/{SUBNET.prefixlen}", "dev", "eth0"],
        ["link", "set", "eth0", "up"],
    ):
        proc = subprocess.run(inside + args, capture_output=True, text=True)
        if proc.returncode != 0:
            raise StepError(f"{name}: `ip {' '.join(args)}` failed: {proc.stderr.strip()}")


def node_states():
    """{node: Slurm state} from sinfo (empty if slurmctld does not answer)."""
    proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True, env=env(), timeout=30)
    if proc.returncode != 0:
        return {}
    return dict(line.split()[:2] for line in proc.stdout.splitlines() if len(line.split()) >= 2)


def wait_up(nodes, timeout):
    t0, states = time.monotonic(), {}
    while time.monotonic() - t0 < timeout:
        states = node_states()
        if all(states.get(n, "").rstrip("*") in UP_STATES for n in nodes):
            return time.monotonic() - t0
        time.sleep(0.5)
    logs = "".join(tail(os.path.join(cluster_dir(), "log", f"slurmd-{n}.log"), 5) or "" for n in nodes)
    raise StepError(
        f"the cluster's nodes did not come up in {timeout} s: {states or 'slurmctld does not answer'}\n"
        + logs
        + (tail(os.path.join(cluster_dir(), "log", "slurmctld.log"), 10) or "")
    )


def start(nodes=4, clock_step=7, slurmd_timeout=20, timeout=90, fs=None):
    """Start what is not running of an N-node cluster with its scratch on fs (default:
    H5STACK_CLUSTER_FS); True if anything was started."""
    layout = load_layout()
    running = layout and any(node_pid(n) for n in layout["nodes"])
    # a node brought back, a restart by `./h5stack run`: the file system it runs with
    fs = fs or (layout.get("fs", "local") if running else None) or settings.get("H5STACK_CLUSTER_FS")
    if fs not in FILE_SYSTEMS:
        raise StepError(f"--fs must be one of {', '.join(FILE_SYSTEMS)}, got {fs!r}")
    if clock_step < 0:
        raise StepError(
            f"--clock-step must be 0 or more seconds (a time namespace cannot start before boot), got {clock_step}"
        )
    if not 1 <= nodes <= min(99, SUBNET.num_addresses - 12):
        raise StepError(
            f"--nodes must be 1 to {min(99, SUBNET.num_addresses - 12)} (node names and {SUBNET}), got {nodes}"
        )
    check_capabilities()
    d = cluster_dir()
    if running and len(layout["nodes"]) != nodes:
        raise StepError(f"a cluster of {len(layout['nodes'])} nodes runs: `./h5stack cluster stop` first")
    if running and layout.get("fs", "local") != fs:
        raise StepError(
            f"the cluster runs with its scratch on {layout.get('fs', 'local')}: `./h5stack cluster stop` first"
        )
    names, offsets = node_names(nodes), clock_offsets(nodes, clock_step)
    down = [n for n in names if not node_pid(n)]
    fs_down = fs in NETWORKED and NETWORKED[fs].down()
    if not down and not fs_down and slurm.pid_alive(d, "slurmctld") and slurm.munge_alive(d):
        return False
    t0 = time.monotonic()
    for sub in ("state", "run", "log", "nodes"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    write_config(names, slurmd_timeout)
    ensure_bridge()
    if fs in NETWORKED:  # its daemons on the bridge's address, before the nodes mount it
        NETWORKED[fs].start(bridge_address(), str(SUBNET))
    save_layout(names, offsets, fs)
    slurm.start_munge(d)
    if not slurm.pid_alive(d, "slurmctld"):
        slurm.start_command([slurm.which("slurmctld")], os.path.join(d, "log", "slurmctld.log"), env())
    for i, (name, offset) in enumerate(zip(names, offsets), 1):
        if name in down:
            start_node(i, name, offset)
    if fs in NETWORKED:
        mount_scratch(fs, names, down)
    wait_up(names, timeout)
    info(
        f"cluster up in {time.monotonic() - t0:.1f} s: {', '.join(names)} "
        f"(clocks +{', +'.join(map(str, offsets))} s; scratch: {fs}); SLURM_CONF={conf_path()}"
    )
    return True


def kill_node(name):
    """Kill every process of the node at once (SIGKILL to its PID 1 ends its PID namespace):
    the node dies as a crashed machine does, without a word to slurmctld."""
    pid = node_pid(name)
    if not pid:
        raise StepError(f"{name} is not running (`./h5stack cluster status`)")
    os.kill(pid, signal.SIGKILL)
    if processes.wait_gone([pid], 5, poll=0.05):
        raise StepError(f"{name} (pid {pid}) did not end after SIGKILL")


def stop_node(name, timeout=20):
    """Stop the node: node.sh stops slurmd and ends, its processes with it. A node that
    outlives timeout s is killed, its FUSE clients' connections aborted first: a client
    hung inside the kernel would keep the node's namespaces alive, and the next start
    would fail on them."""
    pid = node_pid(name)
    if not pid:
        return False
    conns = [fusemounts.connection(pid, scratch_mountpoint(fs)) for fs in NETWORKED]

    def abort_clients():
        for conn in conns:
            fusemounts.abort(conn)

    if processes.end([pid], timeout, before_kill=abort_clients):  # node.sh stops slurmd, then ends
        raise StepError(f"{name} (pid {pid}) did not end after SIGKILL (`ps -o pid,stat,wchan,cmd --ppid {pid}`)")
    return True


def stop():
    """Stop the nodes, slurmctld and munged of the cluster, and remove its bridge."""
    d = cluster_dir()
    layout = load_layout() or {"nodes": []}
    if slurm.pid_alive(d, "slurmctld"):  # its jobs end with the cluster: none comes back at the next start
        jobs = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=env(), timeout=30)
        if jobs.stdout.split():
            subprocess.run(["scancel", *jobs.stdout.split()], capture_output=True, env=env(), timeout=30)
    stopped = [n for n in layout["nodes"] if stop_node(n)]
    if slurm.stop_daemon(d, "slurmctld"):
        stopped.append("slurmctld")
    if slurm.stop_munge(d):
        stopped.append("munged")
    for fs, module in NETWORKED.items():  # the nodes' clients ended with them
        if module.unmount_here(scratch_mountpoint(fs)):
            stopped.append(f"{fs} client here")
    for fs, module in NETWORKED.items():
        stopped += [f"{fs} {n}" for n in module.stop()]
    if shutil.which("ip") and ip("link", "show", BRIDGE, check=False).returncode == 0:
        ip("link", "del", BRIDGE)
        stopped.append(f"bridge {BRIDGE}")
    info(f"stopped: {', '.join(stopped) or 'nothing was running'}")


def _mount_state(pid, fs):
    """The node's mount of the networked scratch: mounted, not answering, not mounted."""
    here = scratch_mountpoint(fs)
    if not pid or fusemounts.mounted(pid, here) != NETWORKED[fs].FSTYPE:
        return "not mounted"
    return "mounted" if fusemounts.answers(here, pid, timeout=10) else "mounted, not answering"


def status_lines():
    """One line per part of the cluster; and whether all of it is up."""
    layout = load_layout()
    if not layout:
        return ["not configured (`./h5stack cluster start`)"], False
    d = cluster_dir()
    ctld, munge = slurm.pid_alive(d, "slurmctld"), slurm.munge_alive(d)
    lines = [f"slurmctld: {'running' if ctld else 'stopped'}, munged: {'running' if munge else 'stopped'}"]
    states = node_states() if ctld else {}
    ok = bool(ctld and munge)
    fs = layout.get("fs", "local")
    for i, (name, offset) in enumerate(zip(layout["nodes"], layout["offsets"]), 1):
        pid, state = node_pid(name), states.get(name, "?")
        ok = ok and bool(pid) and state.rstrip("*") in UP_STATES
        line = f"{name}: {'running' if pid else 'stopped'}, {node_address(i)}, clocks +{offset} s, slurm {state}"
        if fs in NETWORKED:
            state = _mount_state(pid, fs)
            ok = ok and state == "mounted"
            line += f", {NETWORKED[fs].NAME} {state}"
        lines.append(line)
    if fs in NETWORKED:
        line, up = NETWORKED[fs].status()
        ok = ok and up
        lines.append(line)
    return lines, ok


def shell(name, command):
    """Replace this process with COMMAND (default: a shell) inside the node's namespaces."""
    pid = node_pid(name)
    if not pid:
        raise StepError(f"{name} is not running (`./h5stack cluster status`)")
    argv = ["nsenter", "-t", str(pid), "-a", f"--wd={os.getcwd()}", "--"] + (
        command or [os.environ.get("SHELL", "bash")]
    )
    os.execvpe("nsenter", argv, env())


def start_for_run():
    """For `./h5stack run`: start the cluster if it is not running; if it runs with nodes
    down (a node that died), say that the partition is degraded and go on with the nodes
    that are up. True if this call started it."""
    d, layout = cluster_dir(), load_layout()
    if not (layout and slurm.pid_alive(d, "slurmctld") and slurm.munge_alive(d)):
        return start()
    states = node_states()
    down = {n: states.get(n, "unknown") for n in layout["nodes"] if states.get(n, "").rstrip("*") not in UP_STATES}
    if down:
        up, what = len(layout["nodes"]) - len(down), ", ".join(f"{n} {s}" for n, s in down.items())
        if up < 2:
            raise StepError(
                f"partition cluster: only {up} node(s) up ({what}); its jobs need 2: "
                "`./h5stack cluster stop` and start again"
            )
        info(f"partition cluster degraded: {what}; running on the {up} nodes that are up")
    return False
