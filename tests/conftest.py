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

from h5stack.stacks.plan import Stacks  # noqa: E402

#: `./h5stack test --full` (H5STACK_TEST_FULL=1) runs every check on every stack. By
#: default the checks that cost minutes per stack run on selections (docs/developing.md,
#: "The tests, in tiers"): the regression on `generic` on SELECTED_STACKS (both MPIs, both
#: HDF5 series, MPICH's image; the twins' checks run on slurm-local), complementing its stacks
#: (test_regression.SLURM_STACKS); each package's ctest (one to two and a half minutes)
#: on one of PACKAGE_STACKS, the packages in turn (sorted by name), so that the ctests
#: together run on both MPIs and both HDF5 series (every package's code runs on every
#: stack in the regression and the fuzzer); the rest on every stack.
FULL = os.environ.get("H5STACK_TEST_FULL") == "1"
SELECTED_STACKS = ["mpich-hdf5-1.14", "openmpi-hdf5-2"]
PACKAGE_STACKS = ["openmpi-hdf5-2", "mpich-hdf5-1.14"]


def turn(every):
    """Today's turn of `every` in turn: the day of the year (UTC) modulo every."""
    return time.gmtime().tm_yday % every


def in_turn(items, every=None):
    """Of items, those whose turn it is today: each whose index modulo `every` (by default
    len(items): one item a day) is turn(every), so that a default run's selection covers
    them all within `every` days; all with --full."""
    every = every or len(items)
    return [item for i, item in enumerate(items) if FULL or i % every == turn(every)]


def stacks_under_test():
    """The stacks the integration tier sets up and tests: the default ones (stacks.yaml;
    the optional MPIs' stacks with --full), whatever else this machine has built."""
    registry = Stacks()
    return registry.all() if FULL else registry.defaults()


#: their names, in stacks.yaml's order
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
    """stack.json of every tested stack; all must be built (./h5stack test builds them)."""
    result = {}
    for stack in stacks_under_test():
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
