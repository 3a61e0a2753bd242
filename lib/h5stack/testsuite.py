# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`h5stack test`: the project's own test suite (what CI runs).

Installs what only the tests need (requirements/debian-test.txt: Chromium, to render
the performance report), sets up every local stack first (the tests use them; cached after the first run)
and HDF5's own test programs beside the stacks whose source has them (stacks.yaml
`hdf5_test_builds`) and the Apptainer images of the stacks (containers/), then runs pytest on tests/ (or on what follows `--`, e.g. `./h5stack test -- tests/test_cli.py -x`). pytest prints the summary; the exit status is pytest's,
except that "no tests collected" (5) counts as a failure.
"""

import os
import subprocess
import sys

from h5stack.base import paths
from h5stack.base.ui import info
from h5stack.machine import apt, images
from h5stack.stacks.plan import Stacks


def run(full=False, pytest_args=()):
    """Ready what the tests need, run pytest on tests/ (or as pytest_args say); its status.
    full: every per-stack check on every stack."""
    apt.ensure_packages(paths.DEBIAN_TEST_REQUIREMENTS)  # what only the tests need
    stacks = Stacks()
    stacks.setup()
    stacks.setup_hdf5_tests()
    images.setup_images(stacks)  # the Apptainer images (tests/test_containers.py, the container checks)
    extra = list(pytest_args)
    targets = [] if any(not a.startswith("-") for a in extra) else [os.path.join(paths.ROOT, "tests")]
    # -ra: why each test was skipped; --durations: where the time of a run went
    cmd = [sys.executable, "-m", "pytest", *targets, "-ra", "--durations=30", *extra]
    env = dict(os.environ, H5STACK_TEST_FULL="1" if full else os.environ.get("H5STACK_TEST_FULL", "0"))
    info("running: " + " ".join(cmd) + (" (every check on every stack)" if env["H5STACK_TEST_FULL"] == "1" else ""))
    rc = subprocess.call(cmd, cwd=paths.ROOT, env=env)
    if rc == 5:
        info("error: pytest collected no tests")
        return 1
    return rc
