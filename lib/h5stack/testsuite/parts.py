# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The integration tier in parts: the files that start no benchmark (FIRST) run while the
files that judge no timing and share nothing with them (BESIDE) run beside them in a CPU
group of the lowest weight (base/background.py), taking the cores FIRST leaves idle (its
waits for daemons, Slurm, a dead node, a CephFS's capabilities); then every other file,
the benchmarks among them, alone. Each part has its JUnit file (`-first`, `-beside`,
`-rest`); BESIDE's output goes to a log, shown when it ends.

The default selection only: with `--full` (whose cluster runs take every benchmark) or any
pytest argument the tier is one pytest run, as are named paths."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from h5stack.base import background, paths
from h5stack.base.ui import info
from h5stack.testsuite import pytest_run

INTEGRATION = os.path.join(paths.ROOT, "tests", "integration")
#: the files that start no benchmark: the first part, in its own pytest run ...
FIRST = [
    "test_abi.py", "test_apptainer.py", "test_cli.py", "test_cluster.py", "test_cluster_glusterfs.py",
    "test_containers.py", "test_filesystem_checks.py", "test_merge_reflink.py", "test_python.py",
]  # fmt: skip
#: ... and these beside it: no ReFrame run, no cluster, no `./h5stack` command that FIRST
#: runs too, each its own directories; their time limits (a hang after minutes) are far
#: above their run times, so a while with little CPU does not trip them
BESIDE = ["test_crash.py", "test_fuzz.py", "test_hdf5_suite.py", "test_netcdf.py", "test_stacks.py"]
#: pytest's cache of the last failures (--lf), which both parts would write at their end
LASTFAILED = os.path.join(paths.ROOT, ".pytest_cache", "v", "cache", "lastfailed")


def in_tier(name):
    return os.path.join(INTEGRATION, name)


def run(extra, full):
    """The integration tier: in parts where it can, else in one pytest run."""
    if extra or full:
        return pytest_run.run([INTEGRATION, *extra], full)
    when = pytest_run.stamp()
    with background.cpu_group("h5stack-beside") as group:
        if group is None:
            return pytest_run.run([INTEGRATION], full)
        first = with_beside(group, [in_tier(f) for f in FIRST], [in_tier(f) for f in BESIDE], when)
    rest = pytest_run.run([INTEGRATION, *(f"--ignore={in_tier(f)}" for f in FIRST + BESIDE)], full, "rest", when)
    return merged([*first, rest])


def with_beside(group, first, beside, when):
    """pytest on the files `first`, while pytest on `beside` runs in the CPU group; then
    whatever the tests beside left running is killed; (the statuses of both)."""
    log = os.path.join(paths.sub("reports"), f"pytest-{when}-beside.log")
    cache = tempfile.mkdtemp(prefix="h5stack-beside-cache-")  # its own pytest cache (merge_lastfailed)
    cmd, env = pytest_run.command([*beside, "-o", f"cache_dir={cache}"], False, "beside", when)
    info(f"beside the next run, at the lowest CPU weight ({group}): {' '.join(cmd)}; its output: {log}")
    with open(log, "w") as out:
        proc = subprocess.Popen(background.command_in(group, cmd), cwd=paths.ROOT, env=env, stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL)  # fmt: skip
    try:
        with _terminate_raises():
            rc = pytest_run.run(first, False, "first", when)
            if proc.poll() is None:
                info(f"waiting for the tests beside ({', '.join(os.path.basename(b) for b in beside)})")
            beside_rc = proc.wait()
    except BaseException as e:
        if not isinstance(e, KeyboardInterrupt):  # Ctrl-C has reached it already
            proc.send_signal(signal.SIGINT)  # pytest ends with its summary
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=60)
        raise
    finally:
        left = background.kill_all(group)
        if left:
            info(f"killed {left} process(es) the tests beside left running")
        with open(log) as f:
            sys.stdout.write(f"\n---- the tests run beside: {log} ----\n" + f.read())
        sys.stdout.flush()
        merge_lastfailed(os.path.join(cache, "v", "cache", "lastfailed"), beside)
        shutil.rmtree(cache, ignore_errors=True)
    return [rc, _status(beside_rc)]


@contextlib.contextmanager
def _terminate_raises():
    """SIGTERM (a CI's time limit) as an exception, so that the part beside is ended too."""

    def raised(signum, frame):
        raise SystemExit(128 + signum)

    before = signal.signal(signal.SIGTERM, raised)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _status(rc):
    """A process's exit status as a shell gives it: 128 + N for a death by signal N."""
    return 128 - rc if rc < 0 else rc


def merge_lastfailed(theirs_path, files, ours_path=LASTFAILED):
    """pytest's last failures: the part beside kept its own (both parts write theirs at
    their end); its entries replace those of its files in the checkout's cache."""
    try:
        with open(theirs_path) as f:
            theirs = json.load(f)
    except (OSError, ValueError):
        theirs = {}
    try:
        with open(ours_path) as f:
            ours = json.load(f)
    except (OSError, ValueError):
        ours = {}
    mine = {os.path.relpath(f, paths.ROOT) for f in files}
    merged_ = {k: v for k, v in ours.items() if k.split("::")[0] not in mine} | theirs
    if merged_ != ours:
        os.makedirs(os.path.dirname(ours_path), exist_ok=True)
        with open(ours_path, "w") as f:
            json.dump(merged_, f, indent=2, sort_keys=True)


def merged(codes):
    """One status of several pytest runs: the first failure's; "no tests collected" (5) only
    where every run collected none."""
    failed = [c for c in codes if c not in (0, 5)]
    if failed:
        return failed[0]
    if all(c == 5 for c in codes):
        info("error: pytest collected no tests")
        return 1
    return 0
