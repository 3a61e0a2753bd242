# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The Debian packages h5stack needs (requirements/debian*.txt), installed when missing.

Standard library only (plus ui, which is too): it runs before the Python environment
exists. apt-get's output goes to $H5STACK_HOME/logs/apt.log.
"""

import importlib.util
import os
import shutil
import subprocess
import time

from h5stack.base import paths
from h5stack.base.ui import StepError, info, run_logged


def read_requirements(path):
    """Return [(package, conditions)] from requirements/debian.txt."""
    result = []
    with open(path) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            conditions = dict(w.split("=", 1) for w in words[1:])
            result.append((words[0], conditions))
    return result


def needed(conditions):
    """False when a condition of requirements/debian.txt says the package is not needed."""
    cmd = conditions.get("unless-command")
    if cmd and shutil.which(cmd):
        return False
    mod = conditions.get("unless-python-module")
    if mod and importlib.util.find_spec(mod) is not None:
        return False
    return True


def missing_packages(requirements):
    wanted = [pkg for pkg, cond in requirements if needed(cond)]
    if not shutil.which("dpkg-query"):
        raise StepError(
            "this is not a Debian/Ubuntu system (no dpkg-query); install the equivalents of "
            f"{', '.join(wanted)} yourself and set H5STACK_NO_APT=1"
        )
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\n", *wanted],
        capture_output=True,
        text=True,
    )
    installed = {line.split()[0].split(":")[0] for line in proc.stdout.splitlines() if line.endswith(" installed")}
    return [pkg for pkg in wanted if pkg not in installed]


def _sudo(missing):
    """[] as root, ["sudo", "-n"] where sudo works without a password, else StepError."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n"]
    raise StepError(
        "missing Debian packages: "
        + " ".join(missing)
        + "\n  install them with: sudo apt-get install -y "
        + " ".join(missing)
        + "\n  (or set H5STACK_NO_APT=1 if equivalents are installed otherwise)"
    )


def ensure_packages(requirements=None):
    """Install what requirements/debian.txt (or another such list) names and is missing."""
    if os.environ.get("H5STACK_NO_APT") == "1":
        return
    missing = missing_packages(read_requirements(requirements or paths.DEBIAN_REQUIREMENTS))
    if not missing:
        return
    sudo = _sudo(missing)
    log = paths.log_file("apt.log")
    info(f"installing Debian packages: {' '.join(missing)} (log: {log})")
    t0 = time.monotonic()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run_logged(sudo + ["apt-get", "update", "-q"], log, "apt-get update", env=env)
    run_logged(
        sudo + ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], log, "apt-get install", env=env
    )
    info(f"Debian packages installed in {time.monotonic() - t0:.0f} s")
