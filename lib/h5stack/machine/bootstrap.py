# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The Python environment every h5stack command runs in.

Standard library only (plus ui and paths, which are too), because it runs before
anything is installed: a virtual environment with requirements/python.txt, keyed by
the hash of that file and the Python version, under $H5STACK_HOME/venv/; then
`h5stack` is executed again with that environment's Python (its bin/ first on PATH,
so the pinned cmake, reframe and pytest are the ones used). The Debian packages come
first (apt.py); cli.run calls both.

Everything printed here goes to stderr, so `eval "$(./h5stack env STACK)"` stays clean;
pip's output goes to $H5STACK_HOME/logs/venv.log.
"""

import hashlib
import os
import shutil
import sys
import time

from h5stack.base import paths, settings
from h5stack.base.ui import info, run_logged


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
        info(f"removing incomplete virtual environment {vdir}")
        shutil.rmtree(vdir)
    log = paths.log_file("venv.log")
    info(f"creating the Python environment {vdir} (log: {log})")
    t0 = time.monotonic()
    run_logged([sys.executable, "-m", "venv", vdir], log, "python -m venv")
    run_logged([python, "-m", "pip", "install", "-q", "-r", paths.PYTHON_REQUIREMENTS], log, "pip install")
    with open(marker, "w") as f:
        f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
    info(f"Python environment ready in {time.monotonic() - t0:.0f} s")
    return vdir


def in_venv():
    vdir = settings.get("H5STACK_VENV")
    return bool(vdir) and os.path.realpath(sys.prefix) == os.path.realpath(vdir)


def reexec(argv):
    """Run `h5stack argv` again inside the environment (made first if needed); does not return."""
    vdir = ensure_venv()
    python = os.path.join(vdir, "bin", "python")
    env = dict(os.environ, H5STACK_VENV=vdir)
    env["PATH"] = os.path.join(vdir, "bin") + os.pathsep + env.get("PATH", "")
    sys.stdout.flush()
    os.execve(python, [python, os.path.join(paths.ROOT, "h5stack"), *argv], env)
