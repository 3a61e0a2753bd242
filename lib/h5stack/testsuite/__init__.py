# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`h5stack test`: the project's own test suite (what CI runs), in two tiers.

`tests/unit/` needs no stack and no daemon (seconds, its tests spread over worker
processes): it runs first, and alone with `--unit`. `tests/integration/` needs the local
stacks: before it, the default stacks (with `--full` every stack, the optional MPIs'
too; with HDF5's own test programs where the source has them) are set up (cached after
the first run), and the Apptainer images of the stacks (containers/); Apptainer and the
images' base are made beside the stacks' builds, at a lower priority (base/beside.py). The
integration tier's files that time nothing run beside those that start no benchmark, at
the lowest CPU weight (FIRST, BESIDE); the rest, the benchmarks among them, alone after
them. A failing unit tier stops the run before the set-up. What follows `--` goes to pytest
(`./h5stack test -- tests/unit/test_cli_errors.py -x`); named paths are run as named,
with the set-up only if one is outside tests/unit. Both tiers first install what only
the tests need (requirements/debian-test.txt; the integration tier's
requirements/debian-integration.txt are installed beside the stacks' builds). The exit
status is pytest's, except that "no tests collected" (5) counts as a failure.
"""

import os
import subprocess
import sys
import time

from h5stack.base import background, paths, settings
from h5stack.base.beside import beside
from h5stack.base.ui import StepError, info
from h5stack.machine import apt, images
from h5stack.stacks.plan import Stacks

UNIT = os.path.join(paths.ROOT, "tests", "unit")
#: the unit tier in pytest-xdist's worker processes, one more than the cores: many of its
#: tests wait on a subprocess (ReFrame loading a site config, a bounded run's timeout)
UNIT_WORKERS = ["--numprocesses", str((os.cpu_count() or 1) + 1)]
INTEGRATION = os.path.join(paths.ROOT, "tests", "integration")
#: the integration tier's files that start no benchmark (no measurement judged by its
#: ratio): they run first, in their own pytest run ...
FIRST = [
    "test_abi.py", "test_apptainer.py", "test_cli.py", "test_cluster.py", "test_cluster_glusterfs.py",
    "test_containers.py", "test_filesystem_checks.py", "test_merge_reflink.py", "test_python.py",
]  # fmt: skip
#: ... while these run beside them in a CPU group of the lowest weight (base/background.py):
#: they take the cores FIRST leaves idle (its waits for daemons, Slurm, a dead node), never
#: time anything, and share no state with FIRST (no ReFrame run, no cluster); every other
#: file (the benchmarks among them) runs after both, alone
BESIDE = ["test_crash.py", "test_fuzz.py", "test_hdf5_suite.py", "test_netcdf.py", "test_stacks.py"]
#: pytest options whose meaning spans one session (stop at a failure, the last failures,
#: a debugger, a named JUnit file): the tier then runs as one pytest run
ONE_SESSION = ("--pdb", "--trace", "-x", "--exitfirst", "--maxfail", "--sw", "--stepwise", "--lf", "--last-failed",
               "--ff", "--failed-first", "--junit")  # fmt: skip


def run(full=False, unit=False, pytest_args=()):
    """Ready what the tests need and run the tiers (only the unit tier with unit, or the
    test paths pytest_args name); pytest's status. full: every per-stack check on every stack."""
    if unit and full:
        raise StepError("--full selects stacks for the integration tier; --unit runs no stack")
    extra, named = test_args(pytest_args)
    outside = [p for p in named if not _under(p, UNIT)]
    if unit and outside:
        raise StepError(f"--unit runs tests/unit only, not {', '.join(outside)}")
    apt.ensure_packages(paths.DEBIAN_TEST_REQUIREMENTS)  # what only the tests need
    if named:
        if outside:
            _set_up(_full(full))
        return _pytest(extra, full)
    rc = _pytest([UNIT, *_unit_workers(extra), *extra], full)
    if rc != 0 or unit:
        if rc != 0:
            info("the unit tier failed: the stacks are not set up and the integration tier does not run")
        return rc
    _set_up(_full(full))
    return _integration(extra, full)


def _unit_workers(extra):
    """UNIT_WORKERS, unless pytest's arguments choose the workers themselves (-n,
    --numprocesses, -p no:xdist) or debug in this process (--pdb, --trace)."""
    own = any(a in ("--pdb", "--trace", "no:xdist") or a.startswith(("-n", "--numprocesses")) for a in extra)
    return [] if own else UNIT_WORKERS


def test_args(args):
    """(pytest's arguments with each test path made absolute, the paths). A test path is an
    existing file or directory (from here or from the checkout), with or without a ::node
    id; an argument shaped like one that names nothing is an error. Everything else is a
    pytest option or an option's value."""
    result, found = [], []
    for arg in args:
        path, sep, node = arg.partition("::")
        bases = [
            b for b in (os.getcwd(), paths.ROOT) if not arg.startswith("-") and os.path.exists(os.path.join(b, path))
        ]
        if bases:
            found.append(os.path.abspath(os.path.join(bases[0], path)))
            result.append(found[-1] + sep + node)
            continue
        if not arg.startswith("-") and (sep or path.endswith(".py") or path.startswith("tests")):
            raise StepError(f"{arg}: no such test file or directory (here or in {paths.ROOT})")
        result.append(arg)
    return result, found


def _under(path, directory):
    return os.path.commonpath([path, directory]) == directory


def _set_up(full):
    """The Debian packages, stacks (the default ones; with full every stack, the optional
    MPIs' too; HDF5's test programs are part of them) and images the integration tier uses."""
    apt.check_installable(paths.DEBIAN_INTEGRATION_REQUIREMENTS)  # said now, not after the builds
    registry = Stacks()
    stacks = registry.all() if full else registry.defaults()
    # the tier's own Debian packages (a download and dpkg: little CPU), Apptainer (Debian's
    # package, unpacked) and the images' base (debootstrap) are made beside the stacks'
    # builds, at a lower priority; the images' Debian packages first, here
    tools = images.prepare_tools() if images.flavours_of(stacks) and images.can_build() else (lambda: None)

    def early():
        apt.ensure_packages(paths.DEBIAN_INTEGRATION_REQUIREMENTS)
        tools()

    with beside(early, "the tier's Debian packages and Apptainer"):
        registry.setup(stacks)
    images.setup_images(registry, stacks)  # tests/integration/test_containers.py, the container checks


def _integration(extra, full):
    """The integration tier: FIRST with BESIDE beside it in a CPU group of the lowest weight,
    then the rest alone; in one pytest run where no such group can be made or pytest's
    arguments span one session (ONE_SESSION)."""
    if any(a.startswith(ONE_SESSION) for a in extra):
        return _pytest([INTEGRATION, *extra], full)
    with background.cpu_group("h5stack-beside") as group:
        if group is None:
            return _pytest([INTEGRATION, *extra], full)
        first = _with_beside(group, [_in_tier(f) for f in FIRST], [_in_tier(f) for f in BESIDE], extra, full)
    rest = _pytest([INTEGRATION, *(f"--ignore={_in_tier(f)}" for f in FIRST + BESIDE), *extra], full, "rest")
    return _merged([*first, rest])


def _in_tier(name):
    return os.path.join(INTEGRATION, name)


def _with_beside(group, first, beside, extra, full):
    """pytest on the files `first`, while pytest on `beside` runs in the CPU group (its
    output in a log, shown when it ends); (the statuses of both)."""
    log = os.path.join(paths.sub("reports"), f"pytest-{_stamp()}-beside.log")
    cmd, env = _pytest_command([*beside, *extra], full, "beside")
    info(f"beside the next run, at the lowest CPU weight ({group}): {' '.join(cmd)}; its output: {log}")
    with open(log, "w") as out:
        proc = subprocess.Popen(background.command_in(group, cmd), cwd=paths.ROOT, env=env, stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL)  # fmt: skip
    try:
        rc = _pytest([*first, *extra], full, "first")
        if proc.poll() is None:
            info(f"waiting for the tests beside ({', '.join(os.path.basename(b) for b in beside)})")
    finally:
        beside_rc = proc.wait()  # an interrupt reaches it too (the same process group)
        with open(log) as f:
            sys.stdout.write(f"\n---- the tests run beside: {log} ----\n" + f.read())
        sys.stdout.flush()
    return [rc, beside_rc]


def _merged(codes):
    """One status of several pytest runs: the first failure's; "no tests collected" (5) only
    where every run collected none."""
    failed = [c for c in codes if c not in (0, 5)]
    if failed:
        return failed[0]
    if all(c == 5 for c in codes):
        info("error: pytest collected no tests")
        return 1
    return 0


def _full(full):
    """--full, or H5STACK_TEST_FULL=1."""
    return full or settings.get("H5STACK_TEST_FULL") == "1"


def _stamp():
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def _pytest_command(args, full, part=""):
    """(pytest's command line, its environment); part: a name for the JUnit file of one of
    several runs."""
    # -ra: why each test was skipped; --durations: where the time of a run went (every
    # test's time in the JUnit file of the run, kept under the cache's reports/)
    cmd = [sys.executable, "-m", "pytest", *args, "-ra", "--durations=30"]
    if not any(a.startswith("--junit") for a in args):  # unless the caller names one
        name = f"pytest-{_stamp()}{'-' + part if part else ''}.xml"
        cmd.append(f"--junitxml={os.path.join(paths.sub('reports'), name)}")
    env = dict(os.environ, H5STACK_TEST_FULL="1" if full else settings.get("H5STACK_TEST_FULL"))
    return cmd, env


def _pytest(args, full, part=""):
    """pytest's status; "no tests collected" (5) as such where part names one of several runs, else 1."""
    cmd, env = _pytest_command(args, full, part)
    info("running: " + " ".join(cmd) + (" (every check on every stack)" if env["H5STACK_TEST_FULL"] == "1" else ""))
    rc = subprocess.call(cmd, cwd=paths.ROOT, env=env)
    if rc == 5 and not part:
        info("error: pytest collected no tests")
        return 1
    return rc
