"""First stage of every h5stack command: make sure the machine can run it.

Standard library only, because it runs before anything is installed:
1. the Debian packages of requirements/debian.txt (apt-get, when missing);
2. a virtual environment with requirements/python.txt, keyed by the hash of that
   file and the Python version, under $H5STACK_HOME/venv/;
3. re-executes `h5stack` with that environment's Python (its bin/ first on PATH,
   so the pinned cmake, reframe and pytest are the ones used).

Everything printed here goes to stderr, so `eval "$(./h5stack env STACK)"` stays clean;
the output of apt-get and pip goes to log files under $H5STACK_HOME/logs/.
"""

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import time

from . import paths


def say(msg):
    print(f"h5stack: {msg}", file=sys.stderr, flush=True)


class BootstrapError(RuntimeError):
    pass


def read_debian_requirements(path):
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


def missing_debian_packages(requirements):
    wanted = [pkg for pkg, cond in requirements if needed(cond)]
    if not shutil.which("dpkg-query"):
        raise BootstrapError(
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


def run_logged(cmd, log, env=None):
    with open(log, "a") as f:
        f.write(f"\n$ {' '.join(cmd)}\n")
        f.flush()
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        with open(log) as f:
            tail = f.readlines()[-25:]
        raise BootstrapError(
            f"`{' '.join(cmd)}` failed (exit {proc.returncode}); last lines of {log}:\n" + "".join(tail)
        )


def ensure_debian_packages(requirements=None):
    """Install what requirements/debian.txt (or another such list) names and is missing."""
    if os.environ.get("H5STACK_NO_APT") == "1":
        return
    missing = missing_debian_packages(read_debian_requirements(requirements or paths.DEBIAN_REQUIREMENTS))
    if not missing:
        return
    sudo = []
    if os.geteuid() != 0:
        if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
            sudo = ["sudo", "-n"]
        else:
            raise BootstrapError(
                "missing Debian packages: "
                + " ".join(missing)
                + "\n  install them with: sudo apt-get install -y "
                + " ".join(missing)
                + "\n  (or set H5STACK_NO_APT=1 if equivalents are installed otherwise)"
            )
    log = paths.log_file("apt.log")
    say(f"installing Debian packages: {' '.join(missing)} (log: {log})")
    t0 = time.monotonic()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run_logged(sudo + ["apt-get", "update", "-q"], log, env)
    run_logged(sudo + ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], log, env)
    say(f"Debian packages installed in {time.monotonic() - t0:.0f} s")


def venv_dir():
    with open(paths.PYTHON_REQUIREMENTS, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    py = f"py{sys.version_info.major}.{sys.version_info.minor}"
    return os.path.join(paths.home(), "venv", f"{py}-{digest}")


def ensure_venv():
    vdir = venv_dir()
    marker = os.path.join(vdir, ".h5stack-complete")
    python = os.path.join(vdir, "bin", "python")
    if os.path.exists(marker) and os.access(python, os.X_OK):
        return vdir
    if os.path.exists(vdir):
        say(f"removing incomplete virtual environment {vdir}")
        shutil.rmtree(vdir)
    log = paths.log_file("venv.log")
    say(f"creating the Python environment {vdir} (log: {log})")
    t0 = time.monotonic()
    run_logged([sys.executable, "-m", "venv", vdir], log)
    run_logged([python, "-m", "pip", "install", "-q", "-r", paths.PYTHON_REQUIREMENTS], log)
    with open(marker, "w") as f:
        f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
    say(f"Python environment ready in {time.monotonic() - t0:.0f} s")
    return vdir


def in_venv():
    vdir = os.environ.get("H5STACK_VENV")
    return bool(vdir) and os.path.realpath(sys.prefix) == os.path.realpath(vdir)


def main(argv):
    from . import cli

    args = cli.parse(argv)  # --help and usage errors need nothing installed
    if in_venv():
        return cli.main(args)
    try:
        ensure_debian_packages()
        vdir = ensure_venv()
    except BootstrapError as err:
        say(f"error: {err}")
        return 1
    python = os.path.join(vdir, "bin", "python")
    env = dict(os.environ, H5STACK_VENV=vdir)
    env["PATH"] = os.path.join(vdir, "bin") + os.pathsep + env.get("PATH", "")
    sys.stdout.flush()
    os.execve(python, [python, os.path.join(paths.ROOT, "h5stack"), *argv], env)
