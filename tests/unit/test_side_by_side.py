# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The set-up builds the chains of its MPIs side by side (stacks/plan.py side_by_side)."""

import threading

import pytest

from h5stack.base.ui import StepError
from h5stack.stacks.plan import side_by_side


class Part:
    """A stand-in for a build.Component: ensure() records its name, then runs `action`."""

    def __init__(self, name, done, action=None):
        self.name, self.done, self.action = name, done, action

    def ensure(self, jobs):
        if self.action:
            self.action()
        self.done.append(self.name)


def test_chains_run_at_once_each_in_its_order():
    done, meet = [], threading.Barrier(2, timeout=10)  # passes only if both chains wait at once
    chains = [[Part("a1", done, meet.wait), Part("a2", done)], [Part("b1", done, meet.wait), Part("b2", done)]]
    side_by_side(chains, jobs=1)
    assert sorted(done) == ["a1", "a2", "b1", "b2"]
    assert done.index("a1") < done.index("a2") and done.index("b1") < done.index("b2")


def test_a_failure_stops_its_chain_and_is_raised_after_the_others_end(capsys):
    done = []

    def fail():
        raise StepError("HDF5 (mpich): build failed")

    chains = [[Part("a1", done, fail), Part("a2", done)], [Part("b1", done), Part("b2", done)]]
    with pytest.raises(StepError, match="build failed"):
        side_by_side(chains, jobs=1)
    assert done.count("a2") == 0 and {"b1", "b2"} <= set(done)
    assert "the other MPIs' builds go on" in capsys.readouterr().err
