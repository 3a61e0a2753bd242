# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The integration tier in parts: the files that start no benchmark (FIRST) run while files
that share nothing with them (BESIDE) run beside them in a CPU group of a tenth of a
process's weight (base/background.py), taking the cores FIRST leaves idle (its waits for
daemons, Slurm, a dead node, a CephFS's capabilities); then every other file, the
benchmarks among them, alone. Each part has its JUnit file (`-first`, `-beside`, `-rest`);
BESIDE's output goes to a log, shown when it ends.

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
#: runs too, each its own directories; their time limits (a hang: 60 s and more for runs
#: of a second or less) hold at a tenth of a core. Not HDF5's suites: the DSM's separate
#: jobs wait 10 s for an ompi-server's address
BESIDE = ["test_crash.py", "test_fuzz.py", "test_netcdf.py", "test_stacks.py"]
#: pytest's cache of the last failures (--lf), which both parts would write at their end
LASTFAILED = os.path.join(paths.ROOT, ".pytest_cache", "v", "cache", "lastfailed")


def in_tier(name):
    return os.path.join(INTEGRATION, name)


def run(extra, full):
    """The integration tier: in parts where it can, else in one pytest run."""
    if extra or full:
        return pytest_run.status([pytest_run.run([INTEGRATION, *extra], full)])
    when = pytest_run.stamp()
    with background.cpu_group("h5stack-beside") as group:
        if group is None:
            return pytest_run.status([pytest_run.run([INTEGRATION], full)])
        first = with_beside(group, [in_tier(f) for f in FIRST], [in_tier(f) for f in BESIDE], when)
    rest = pytest_run.run([INTEGRATION, *(f"--ignore={in_tier(f)}" for f in FIRST + BESIDE)], full, "rest", when)
    return pytest_run.status([*first, rest])


def with_beside(group, first, beside, when):
    """pytest on the files `first`, while pytest on `beside` runs in the CPU group; then
    whatever the tests beside left running is killed; (the statuses of both)."""
    log = os.path.join(paths.sub("reports"), f"pytest-{when}-beside.log")
    cache = _seeded_cache()
    cmd, env = pytest_run.command([*beside, "-o", f"cache_dir={cache}"], False, "beside", when)
    info(f"beside the next run, at a tenth of a process's CPU weight ({group}): {' '.join(cmd)}; its output: {log}")
    with _terminate_raises(), open(log, "w") as out:
        proc = subprocess.Popen(background.command_in(group, cmd), cwd=paths.ROOT, env=env, stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL)  # fmt: skip
        try:
            rc = pytest_run.run(first, False, "first", when)
            if proc.poll() is None:
                info(f"waiting for the tests beside ({', '.join(os.path.basename(b) for b in beside)})")
            beside_rc = pytest_run.wait_ending(proc)
        except BaseException as e:
            pytest_run.end(proc, e)
            raise
        finally:
            _after_beside(group, log, cache, beside)
    return [rc, _status(beside_rc)]


def _after_beside(group, log, cache, beside):
    """Each step on its own, none hiding another's failure: what the tests beside left
    running killed, their output shown, their last failures kept."""
    left = background.kill_all(group)
    if left:
        info(f"killed {left} process(es) the tests beside left running")
    try:
        with open(log, errors="replace") as f:
            sys.stdout.write(f"\n---- the tests run beside: {log} ----\n" + f.read())
        sys.stdout.flush()
    except OSError as e:
        info(f"the output of the tests beside cannot be shown: {log}: {e.strerror}")
    try:
        merge_lastfailed(os.path.join(cache, "v", "cache", "lastfailed"), beside)
    except OSError as e:
        info(f"pytest's last failures of the tests beside are not kept: {e}")
    shutil.rmtree(cache, ignore_errors=True)


def _seeded_cache():
    """A pytest cache for the part beside (both parts write theirs at their end), holding the
    checkout's last failures: an interrupted part keeps those of its files."""
    cache = tempfile.mkdtemp(prefix="h5stack-beside-cache-")
    if os.path.isfile(LASTFAILED):
        os.makedirs(os.path.join(cache, "v", "cache"))
        shutil.copy(LASTFAILED, os.path.join(cache, "v", "cache", "lastfailed"))
    return cache


@contextlib.contextmanager
def _terminate_raises():
    """SIGTERM (a CI's time limit) as an exception, so that both parts end as pytest does."""

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


def merge_lastfailed(theirs_path, files, ours_path=None):
    """pytest's last failures (`ours_path`: the checkout's, LASTFAILED): those of `files`
    as the part beside left them in its own cache, every other as they are."""
    ours_path = ours_path or LASTFAILED
    theirs, ours = _json_or_empty(theirs_path), _json_or_empty(ours_path)
    mine = {os.path.relpath(f, paths.ROOT) for f in files}
    merged_ = {k: v for k, v in ours.items() if k.split("::")[0] not in mine}
    merged_ |= {k: v for k, v in theirs.items() if k.split("::")[0] in mine}
    if merged_ != ours:
        os.makedirs(os.path.dirname(ours_path), exist_ok=True)
        with open(ours_path + ".part", "w") as f:
            json.dump(merged_, f, indent=2, sort_keys=True)
        os.replace(ours_path + ".part", ours_path)


def _json_or_empty(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}
