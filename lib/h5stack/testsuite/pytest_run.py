# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""One pytest run of `./h5stack test`: its command line, its JUnit file under the cache's
reports/, its status."""

import os
import signal
import subprocess
import sys
import time

from h5stack.base import paths, settings
from h5stack.base.ui import info
from h5stack.machine import processes


def stamp():
    """DATE-TIME-PID: the runs of one tier share it, each its own part name after it."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def command(args, full, part="", when=None):
    """(pytest's command line, its environment); part: the name of one of a tier's runs (in
    its JUnit file's name, after the tier's stamp `when`)."""
    # -ra: why each test was skipped; --durations: where the time of a run went (every
    # test's time in the JUnit file of the run, kept under the cache's reports/)
    cmd = [sys.executable, "-m", "pytest", *args, "-ra", "--durations=30"]
    if not any(a.startswith("--junit") for a in args):  # unless the caller names one
        name = f"pytest-{when or stamp()}{'-' + part if part else ''}.xml"
        cmd.append(f"--junitxml={os.path.join(paths.sub('reports'), name)}")
    env = dict(os.environ, H5STACK_TEST_FULL="1" if full else settings.get("H5STACK_TEST_FULL"))
    return cmd, env


def run(args, full, part="", when=None):
    """pytest's own status (`status` makes a tier's of one run's or several's)."""
    cmd, env = command(args, full, part, when)
    info("running: " + " ".join(cmd) + (" (every check on every stack)" if env["H5STACK_TEST_FULL"] == "1" else ""))
    return wait_ending(subprocess.Popen(cmd, cwd=paths.ROOT, env=env))


def status(codes):
    """A tier's status from its pytest runs' (one, or its parts'): the first failure's;
    "no tests collected" (5) only where no run collected any, and then a failure (1)."""
    failed = [c for c in codes if c not in (0, 5)]
    if failed:
        return failed[0]
    if all(c == 5 for c in codes):
        info("error: pytest collected no tests")
        return 1
    return 0


#: seconds a pytest run has to end after an interrupt (its fixtures' teardown: a cluster's
#: daemons and mounts stopped) before it is killed
ENDING = 120


def wait_ending(proc):
    """The process's status; on an exception (Ctrl-C, which reached it too; SIGTERM turned
    into one) it ends as `end` says, and the exception goes on."""
    try:
        return proc.wait()
    except BaseException as e:
        end(proc, e)
        raise


def end(proc, cause):
    """A pytest run ended because of the exception `cause`: SIGINT (Ctrl-C has sent it one
    already) and ENDING seconds to end as pytest does, with its teardown and summary, then
    SIGKILL (processes.end); reaped."""
    if proc.poll() is None:
        processes.end([proc.pid], ENDING, first=None if isinstance(cause, KeyboardInterrupt) else signal.SIGINT)
    proc.wait()
