# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack test` runs the unit tier in worker processes (pytest-xdist), except where
pytest's arguments choose otherwise (lib/h5stack/testsuite/)."""

import pytest

from h5stack import testsuite


@pytest.mark.parametrize(
    "extra, workers",
    [([], True), (["-x"], True), (["--pdb"], False), (["--trace"], False), (["-n", "0"], False), (["-n0"], False),
     (["--numprocesses=1"], False), (["-p", "no:xdist"], False)],
)  # fmt: skip
def test_the_unit_tier_takes_workers_unless_the_arguments_choose(extra, workers):
    """The unit tier runs in worker processes, except where pytest's arguments name the
    workers themselves or debug in one process (pytest-xdist refuses --pdb)."""
    assert (testsuite._unit_workers(extra) == testsuite.UNIT_WORKERS) is workers
    assert testsuite._unit_workers(extra) in ([], testsuite.UNIT_WORKERS)
