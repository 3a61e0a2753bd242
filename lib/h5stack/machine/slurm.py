# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A real Slurm on this machine alone (system `slurm-local`): `./h5stack slurm start|stop|status`.

Debian's slurm-wlm and munge (requirements/debian.txt) run with their own
configuration under $H5STACK_HOME/slurm/: munged on a private socket with a key made
here, slurmctld and slurmd on loopback (ports from the environment or 6917/6918), as
the user who starts them, with state, spool, pid and log files in that directory.
site-configs/slurm-local/slurm.conf.in is the configuration template. Every Slurm
command then needs SLURM_CONF=$H5STACK_HOME/slurm/slurm.conf (`./h5stack slurm env`
prints it; `./h5stack run --system slurm-local` sets it and starts Slurm when needed).
"""

import contextlib
import getpass
import os
import shutil
import socket
import subprocess
import time

from h5stack.base import paths, settings
from h5stack.base.ui import StepError, info, tail
from h5stack.machine import processes

PROGRAMS = ["munged", "mungekey", "munge", "slurmctld", "slurmd", "sinfo", "squeue", "sbatch", "srun", "scontrol"]
TEMPLATE = os.path.join(paths.SITE_CONFIGS, "slurm-local", "slurm.conf.in")


def slurm_dir():
    return paths.sub("slurm")


def conf_path():
    return os.path.join(slurm_dir(), "slurm.conf")


def env():
    """The environment of Slurm commands for this Slurm."""
    return dict(os.environ, SLURM_CONF=conf_path())


def which(program):
    return shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def check_programs(programs=PROGRAMS):
    missing = [p for p in programs if not which(p)]
    if missing:
        raise StepError(
            f"Slurm/munge programs missing: {', '.join(missing)} (Debian packages slurm-wlm and munge, "
            "which `./h5stack` installs from requirements/debian.txt)"
        )


def write_config():
    d = slurm_dir()
    for sub in ("munge", "state", "spool", "run", "log"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    values = {
        "host": socket.gethostname().split(".")[0],
        "ctld_port": settings.get("H5STACK_SLURMCTLD_PORT"),
        "slurmd_port": settings.get("H5STACK_SLURMD_PORT"),
        "user": getpass.getuser(),
        "dir": d,
        "cpus": os.cpu_count(),
        "memory_mb": int(memory_mb() * 0.8),
    }
    write_file(conf_path(), fill(TEMPLATE, values))


def memory_mb():
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("MemTotal:")) // 1024


def fill(template, values):
    with open(template) as f:
        return f.read().format(**values)


def write_file(path, text):
    """Write by a rename: a reader never sees half a file."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def munge_alive(d):
    proc = subprocess.run([which("munge"), "-n", "-S", os.path.join(d, "munge", "munge.socket")], capture_output=True)
    return proc.returncode == 0


def pid_alive(d, name):
    """The pid in d/run/NAME.pid if that process lives, else None."""
    try:
        with open(os.path.join(d, "run", f"{name}.pid")) as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if pid > 0 and processes.alive(pid) else None


def _pid_alive(name):
    return pid_alive(slurm_dir(), name)


def _node_state():
    proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=env(), timeout=30)
    return proc.stdout.strip() if proc.returncode == 0 else None


def is_running():
    return bool(_pid_alive("slurmctld") and _pid_alive("slurmd") and munge_alive(slurm_dir()))


def start_command(cmd, log, environ):
    """Run a daemon's start command; its failure is an error with the end of its log."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=environ)
    if proc.returncode != 0:
        last = tail(log, 15) or "(no log)\n"
        raise StepError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}): {proc.stderr.strip()}\n{log}:\n{last}")


def start_munge(d):
    """munged on d/munge/munge.socket with a key made there (unless it runs already)."""
    os.makedirs(os.path.join(d, "munge"), exist_ok=True)
    os.makedirs(os.path.join(d, "log"), exist_ok=True)
    os.chmod(os.path.join(d, "munge"), 0o700)  # munged refuses a key or socket directory others can write
    key, log = os.path.join(d, "munge", "munge.key"), os.path.join(d, "log", "munged.log")
    if not os.path.exists(key):
        start_command([which("mungekey"), "--create", "--keyfile", key], log, os.environ)
    if not munge_alive(d):
        sock, m = os.path.join(d, "munge", "munge.socket"), os.path.join(d, "munge")
        cmd = [which("munged"), "--force", f"--socket={sock}", f"--key-file={key}", f"--log-file={log}"]
        cmd += [f"--pid-file={m}/munged.pid", f"--seed-file={m}/munged.seed"]
        start_command(cmd, log, os.environ)


def stop_munge(d):
    sock = os.path.join(d, "munge", "munge.socket")
    if os.path.exists(sock) and which("munged"):
        return subprocess.run([which("munged"), "--stop", f"--socket={sock}"], capture_output=True).returncode == 0
    return False


def stop_daemon(d, name, timeout=30):
    """End the daemon of d/run/NAME.pid (SIGTERM; SIGKILL after timeout s); True if one was running."""
    pid = pid_alive(d, name)
    if not pid:
        return False
    if not processes.end([pid], timeout):  # a killed daemon leaves its pid file: a pid another process may get
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(d, "run", f"{name}.pid"))
    return True


def start(timeout=60):
    """Start munged, slurmctld and slurmd (what is not running yet); wait until the node is idle.
    Returns True if anything was started."""
    check_programs()
    d = slurm_dir()
    if is_running() and _node_state() in ("idle", "mixed", "allocated"):
        return False
    t0 = time.monotonic()
    write_config()
    start_munge(d)
    for daemon in ("slurmctld", "slurmd"):
        if not _pid_alive(daemon):
            start_command([which(daemon)], os.path.join(d, "log", f"{daemon}.log"), env())
    state = None
    while time.monotonic() - t0 < timeout:
        state = _node_state()
        if state in ("idle", "mixed", "allocated"):
            info(f"Slurm is up ({state}) in {time.monotonic() - t0:.1f} s: SLURM_CONF={conf_path()}")
            return True
        time.sleep(0.5)
    raise StepError(
        f"Slurm did not come up in {timeout} s (node state {state!r}); logs in {os.path.join(d, 'log')}:\n"
        + (tail(os.path.join(d, "log", "slurmctld.log"), 15) or "(no log)\n")
        + (tail(os.path.join(d, "log", "slurmd.log"), 15) or "(no log)\n")
    )


def start_for_run():
    """For `./h5stack run --system slurm-local`: start what is not running; True if anything was."""
    return start()


def stop(timeout=30):
    """Stop slurmd, slurmctld and munged (those of this Slurm only)."""
    d = slurm_dir()
    stopped = [name for name in ("slurmd", "slurmctld") if stop_daemon(d, name, timeout)]
    if stop_munge(d):
        stopped.append("munged")
    info(f"stopped: {', '.join(stopped) or 'nothing was running'}")


def status():
    if not os.path.exists(conf_path()):
        return "not configured"
    parts = [f"{n}: {'running' if _pid_alive(n) else 'stopped'}" for n in ("slurmctld", "slurmd")]
    parts.append(f"munged: {'running' if munge_alive(slurm_dir()) else 'stopped'}")
    if _pid_alive("slurmctld"):
        parts.append(f"node: {_node_state()}")
    return ", ".join(parts)
