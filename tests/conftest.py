# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Shared fixtures of the project's tests (run with `./h5stack test`).

The tests run inside h5stack's virtual environment with lib/ importable, after
`./h5stack test` has set up every local stack.
"""

import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "lib"))

from h5stack.base import settings  # noqa: E402
from h5stack.stacks.plan import Stacks  # noqa: E402

#: `./h5stack test --full` (H5STACK_TEST_FULL=1) runs every check on every stack. By
#: default the checks that cost minutes per stack run on selections (docs/developing.md,
#: "The tests, in tiers"): the regression on `generic` on SELECTED_STACKS (both MPIs, both
#: HDF5 series, MPICH's image; the twins' checks run on slurm-local), complementing its stacks
#: (test_regression.SLURM_STACKS); the per-stack files (the stacks' programs, h5py, the
#: fuzzer's workloads, HDF5's and netCDF's suites, the packages' ctests) on the stacks of
#: the day's turn (STACK_TURNS: each MPI, each HDF5 series, plain and patched; the other
#: half the next day); each package's ctest (one to two and a half minutes) on one of
#: them, the packages in turn (sorted by name), so that the ctests together run on both
#: MPIs and both HDF5 series (every package's code runs on every stack in the regression
#: and the fuzzer's workloads).
FULL = os.environ.get("H5STACK_TEST_FULL") == "1"
#: this machine's cores: the tests that run work side by side run this many at once
CORES = os.cpu_count() or 1
SELECTED_STACKS = ["mpich-hdf5-1.14", "openmpi-hdf5-2"]
#: the plain stacks whose per-stack tests run on a day, with their twins: each day one of
#: each MPI and one of each HDF5 series, so two days run every default stack; Open MPI's
#: first (PACKAGE_STACKS: the packages' ctests take them in turn)
STACK_TURNS = [["openmpi-hdf5-2", "mpich-hdf5-1.14"], ["openmpi-hdf5-1.14", "mpich-hdf5-2"]]


def turn(every):
    """Today's turn of `every` in turn: the day of the year (UTC) modulo every;
    H5STACK_TEST_DAY=N replays the selection of day N of the year (a CI run's, another
    day's)."""
    day = settings.get("H5STACK_TEST_DAY") or str(time.gmtime().tm_yday)
    if not day.isdigit():
        raise pytest.UsageError(f"H5STACK_TEST_DAY={day!r}: not a day of the year (a number, 1 to 366)")
    return int(day) % every


def in_turn(items, every=None):
    """Of items, those whose turn it is today: each whose index modulo `every` (by default
    len(items): one item a day) is turn(every), so that a default run's selection covers
    them all within `every` days; all with --full."""
    every = every or len(items)
    return [item for i, item in enumerate(items) if FULL or i % every == turn(every)]


#: the plain stacks of the day's turn; also the stacks the packages' ctests run on by
#: default, one package after the other (sorted by name: the DSM's on Open MPI's,
#: multifile's on MPICH's: Open MPI 4.1.4 takes 263 s for multifile's ctest against 78-107 s
#: on MPICH, MPICH 155 s for the DSM's against 77 s)
PACKAGE_STACKS = STACK_TURNS[turn(len(STACK_TURNS))]


def stacks_set_up():
    """Every stack the integration tier sets up: the default ones (stacks.yaml; the optional
    MPIs' too with --full). HDF5's and netCDF's suites choose from these: only the 1.14
    stacks carry their programs, and the selections pick an MPI (the DSM's separate jobs
    need Open MPI)."""
    registry = Stacks()
    return registry.all() if FULL else registry.defaults()


def stacks_under_test():
    """The stacks the per-stack tests run on: those of the day's turn (PACKAGE_STACKS) and
    their twins; with --full every stack (the optional MPIs' too)."""
    return [s for s in stacks_set_up() if FULL or (s.base or s).name in PACKAGE_STACKS]


#: the names of stacks_under_test(), in stacks.yaml's order
TESTED = [s.name for s in stacks_under_test()]


def selected(stack_name, selection=SELECTED_STACKS):
    """Does this stack run the per-stack checks of this selection (all with --full)?"""
    return FULL or stack_name in selection


def h5stack(*args, env=None, check=False, timeout=1800):
    """Run ./h5stack with args; return the CompletedProcess (text output)."""
    proc = subprocess.run(
        [os.path.join(ROOT, "h5stack"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"./h5stack {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def in_stack(stack, script, cwd=None, timeout=600, env=None):
    """Run a bash script (-e) after `eval "$(./h5stack env STACK)"`; the CompletedProcess."""
    return subprocess.run(
        ["bash", "-ec", f'eval "$({ROOT}/h5stack env {stack})"\n{script}'],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip


@pytest.fixture(scope="session")
def stacks():
    return Stacks()


@pytest.fixture(scope="session")
def stack_descriptions(stacks):
    """stack.json of every stack set up; all must be built (./h5stack test builds them)."""
    result = {}
    for stack in stacks_set_up():
        built, detail = stack.status()
        assert built, f"stack {stack.name} is not usable: {detail}"
        result[stack.name] = stack.description()
    return result


def preload_library(stacks, stack_descriptions, stack):
    """The preload library (libh5mf_preload.so: an application's H5Pset_fapl_mpio becomes
    the driver HDF5_DRIVER names) of the plain stack's multifile package; a twin, which
    has the driver built in, takes its base stack's (the library calls only HDF5's
    public API)."""
    base = stacks.get(stack).base or stacks.get(stack)
    for pkg in stack_descriptions[base.name]["packages"]:
        lib = os.path.join(pkg["prefix"], "lib", "libh5mf_preload.so")
        if os.path.exists(lib):
            return lib
    raise AssertionError(f"{base.name} has no libh5mf_preload.so")
