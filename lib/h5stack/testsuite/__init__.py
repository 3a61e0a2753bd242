# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`h5stack test`: the project's own test suite (what CI runs), in two tiers.

`tests/unit/` needs no stack and no daemon (seconds, its tests spread over worker
processes): it runs first, and alone with `--unit`. `tests/integration/` needs the local
stacks: before it, the default stacks (with `--full` every stack, the optional MPIs'
too; with HDF5's own test programs where the source has them) are set up (cached after
the first run), and the Apptainer images of the stacks (containers/); Apptainer and the
images' base are made beside the stacks' builds, at a lower priority (base/beside.py). The
integration tier's files that share nothing with those that start no benchmark run beside
them, at a tenth of a process's CPU weight (testsuite/parts.py); the rest, the benchmarks
among them, alone after them. A failing unit tier stops the run before the set-up. What follows `--` goes to pytest
(`./h5stack test -- tests/unit/test_cli_errors.py -x`); named paths are run as named,
with the set-up only if one is outside tests/unit. Both tiers first install what only
the tests need (requirements/debian-test.txt; the integration tier's
requirements/debian-integration.txt are installed beside the stacks' builds). The exit
status is pytest's, except that "no tests collected" (5) counts as a failure.
"""

import os

from h5stack.base import paths, settings
from h5stack.base.beside import beside
from h5stack.base.ui import StepError, info
from h5stack.machine import apt, images
from h5stack.stacks.plan import Stacks
from h5stack.testsuite import parts, pytest_run

UNIT = os.path.join(paths.ROOT, "tests", "unit")
#: the unit tier in pytest-xdist's worker processes, one more than the cores: many of its
#: tests wait on a subprocess (ReFrame loading a site config, a bounded run's timeout)
UNIT_WORKERS = ["--numprocesses", str((os.cpu_count() or 1) + 1)]


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
        return pytest_run.status([pytest_run.run(extra, full)])
    rc = pytest_run.status([pytest_run.run([UNIT, *_unit_workers(extra), *extra], full)])
    if rc != 0 or unit:
        if rc != 0:
            info("the unit tier failed: the stacks are not set up and the integration tier does not run")
        return rc
    _set_up(_full(full))
    return parts.run(extra, _full(full))


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


def _full(full):
    """--full, or H5STACK_TEST_FULL=1."""
    return full or settings.get("H5STACK_TEST_FULL") == "1"
