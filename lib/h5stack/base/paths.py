# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Where h5stack's files are: the checkout and the cache ($H5STACK_HOME)."""

import contextlib
import errno
import fcntl
import os
import sys
import tempfile

from h5stack.base.ui import StepError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))
DEBIAN_REQUIREMENTS = os.path.join(ROOT, "requirements", "debian.txt")
DEBIAN_TEST_REQUIREMENTS = os.path.join(ROOT, "requirements", "debian-test.txt")
PYTHON_REQUIREMENTS = os.path.join(ROOT, "requirements", "python.txt")
PYTHON_STACK_REQUIREMENTS = os.path.join(ROOT, "requirements", "python-stacks.txt")
PYTHON_PACKAGE_DIR = os.path.join(ROOT, "python")
STACKS_FILE = os.path.join(ROOT, "stacks.yaml")
# the project's version (CMake projects of packages/, python/, the Spack recipes)
VERSION_FILE = os.path.join(ROOT, "VERSION")
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


def umask():
    """The process's umask (read by setting it, then setting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_dir(path):
    """path as a directory, made with its parents when missing. StepError naming path and
    the reason when it cannot be one (a file there, or above it)."""
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise StepError(f"{path}: not a directory") from None
    except OSError as err:
        reason = err.strerror
        if err.errno == errno.ENOTDIR:
            above = os.path.dirname(path)
            while above and not os.path.lexists(above) and above != os.path.dirname(above):
                above = os.path.dirname(above)
            reason = f"{above} is not one" if above and not os.path.isdir(above) else reason
        raise StepError(f"{path}: cannot make the directory: {reason}") from None
    return path


def replace_file(path, text):
    """Make path a new file holding text: written to a private temporary file beside it
    (mkstemp: O_EXCL, a name no one can have planted a link at), then renamed over path,
    so a reader never sees half of it and a link at path is replaced, never written
    through. The file gets the permissions open() would give it. StepError naming path
    and the reason when it cannot be written."""
    if os.path.isdir(path) and not os.path.islink(path):
        raise StepError(f"{path}: a directory, not a file")
    where = make_dir(os.path.dirname(os.path.abspath(path)))
    try:
        fd, tmp = tempfile.mkstemp(dir=where, prefix=os.path.basename(path) + ".", suffix=".tmp")
    except OSError as err:
        raise StepError(f"{path}: cannot write it: {err.strerror}") from None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException as err:
        os.unlink(tmp)
        if isinstance(err, OSError):
            raise StepError(f"{path}: cannot write it: {err.strerror}") from None
        raise
    return path
