# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Where h5stack's files are: the checkout and the cache ($H5STACK_HOME)."""

import contextlib
import fcntl
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
DEBIAN_REQUIREMENTS = os.path.join(ROOT, "requirements", "debian.txt")
DEBIAN_TEST_REQUIREMENTS = os.path.join(ROOT, "requirements", "debian-test.txt")
PYTHON_REQUIREMENTS = os.path.join(ROOT, "requirements", "python.txt")
PYTHON_STACK_REQUIREMENTS = os.path.join(ROOT, "requirements", "python-stacks.txt")
PYTHON_PACKAGE_DIR = os.path.join(ROOT, "python")
STACKS_FILE = os.path.join(ROOT, "stacks.yaml")
PACKAGES_DIR = os.path.join(ROOT, "packages")
# C shared by the drivers, built into each package beside it (no CMake project of its own)
VFD_COMMON_DIR = os.path.join(PACKAGES_DIR, "vfd-common")
PATCHES_DIR = os.path.join(ROOT, "patches")
SITE_CONFIGS = os.path.join(ROOT, "site-configs")
REFRAME_TESTS = os.path.join(ROOT, "reframe-tests")


def home():
    """The cache and install root: $H5STACK_HOME, default ~/.cache/h5stack."""
    return os.path.abspath(os.path.expanduser(os.environ.get("H5STACK_HOME") or os.path.join("~", ".cache", "h5stack")))


def sub(*parts, create=True):
    path = os.path.join(home(), *parts)
    if create:
        os.makedirs(path, exist_ok=True)
    return path


def log_file(name):
    return os.path.join(sub("logs"), name)


@contextlib.contextmanager
def locked(name):
    """Hold $H5STACK_HOME/<name>.lock: one set-up at a time per cache."""
    with open(os.path.join(sub(""), f"{name}.lock"), "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"h5stack: waiting for another h5stack {name} in {home()} to finish", file=sys.stderr, flush=True)
            fcntl.flock(f, fcntl.LOCK_EX)
        yield
