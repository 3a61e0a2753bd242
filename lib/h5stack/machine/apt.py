# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The Debian packages h5stack needs (requirements/debian*.txt, and the MPIs' packages
of stacks.yaml), installed when missing.

Standard library only (plus ui, which is too): it runs before the Python environment
exists, so stacks.yaml's `debian_packages` lists are read without PyYAML
(`mpi_packages`: one flow sequence per line, as stacks.yaml writes them). apt-get's
output goes to $H5STACK_HOME/logs/apt.log.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import time

from h5stack.base import paths, settings
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


def mpi_packages(role, path=None):
    """The Debian packages of every MPI of stacks.yaml for `role` ("build": what the
    stacks are built with; "run": what an image of them runs with), in the file's order:
    the lists `mpis.<mpi>.debian_packages.<role>`, each a one-line `[a, b]`."""
    packages, section, in_lists = [], None, None
    with open(path or paths.STACKS_FILE) as f:
        for line in f:
            text = line.split("#", 1)[0].rstrip()
            if not text.strip():
                continue
            indent = len(text) - len(text.lstrip())
            if indent == 0:
                section = text.strip()
                continue
            if section != "mpis:":
                continue
            if text.strip() == "debian_packages:":
                in_lists = indent
                continue
            if in_lists is not None and indent <= in_lists:
                in_lists = None
            m = re.fullmatch(r"\s*(\w+):\s*\[(.*)\]\s*", text) if in_lists is not None else None
            if m and m.group(1) == role:
                packages += [w.strip().strip("\"'") for w in m.group(2).split(",") if w.strip()]
    if not packages:
        raise StepError(f"{path or paths.STACKS_FILE}: no mpis.<mpi>.debian_packages.{role} (a one-line [list])")
    return packages


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


def _to_install(wanted):
    """(the missing ones of wanted, the command prefix that installs them); raises, naming
    them and the command, where this user cannot; nothing with H5STACK_NO_APT."""
    missing = [] if settings.is_on("H5STACK_NO_APT") else missing_packages(wanted)
    return missing, (_sudo(missing) if missing else [])


def check_installable(requirements):
    """Raise now where packages of a requirements file are missing and this user cannot
    install them (for an install that runs later)."""
    _to_install(read_requirements(requirements))


def ensure_packages(requirements=None):
    """Install what requirements/debian.txt and the MPIs' build packages of stacks.yaml
    (or another list such as debian.txt) name and is missing."""
    if settings.is_on("H5STACK_NO_APT"):
        return
    if requirements is None:
        wanted = read_requirements(paths.DEBIAN_REQUIREMENTS) + [(p, {}) for p in mpi_packages("build")]
    else:
        wanted = read_requirements(requirements)
    missing, sudo = _to_install(wanted)
    if not missing:
        return
    log = paths.log_file("apt.log")
    info(f"installing Debian packages: {' '.join(missing)} (log: {log})")
    t0 = time.monotonic()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run_logged(sudo + ["apt-get", "update", "-q"], log, "apt-get update", env=env)
    run_logged(
        sudo + ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], log, "apt-get install", env=env
    )
    info(f"Debian packages installed in {time.monotonic() - t0:.0f} s")
