# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The set-up builds its components two at a time, each once those it needs are built
(stacks/plan.py in_dependency_order)."""

import signal
import threading
import time

import pytest

from h5stack.base.ui import StepError
from h5stack.stacks.plan import in_dependency_order


class Part:
    """A stand-in for a build.Component: ensure() runs `action`, then records its name."""

    def __init__(self, name, log, action=None):
        self.name, self.label, self.log, self.action = name, name, log, action

    def ensure(self, jobs):
        self.log.append(("start", self.name))
        if self.action:
            self.action()
        self.log.append(("end", self.name))


def test_two_independent_components_build_at_once():
    log, meet = [], threading.Barrier(2, timeout=10)  # passes only if both wait at once
    a, b = Part("a", log, meet.wait), Part("b", log, meet.wait)
    in_dependency_order([a, b], {}, jobs=1)
    assert sorted(n for e, n in log if e == "end") == ["a", "b"]


def test_a_component_waits_for_those_it_comes_after_and_a_free_worker_takes_the_next():
    log = []
    a = Part("a", log, lambda: time.sleep(0.3))
    b = Part("b", log)  # comes after a: not before a has ended, though listed before c
    c = Part("c", log)  # free from the start: the second worker takes it while a builds
    in_dependency_order([a, b, c], {b: [a]}, jobs=1)
    assert log.index(("start", "b")) > log.index(("end", "a")), log
    assert log.index(("end", "c")) < log.index(("end", "a")), log


def test_a_failure_stops_what_comes_after_it_and_is_raised_after_the_others_end(capsys):
    log = []

    def fail():
        raise StepError("HDF5 (mpich): build failed")

    hdf5 = Part("hdf5", log, fail)
    package, its_test = Part("package", log), Part("its-test", log)  # after hdf5, after package
    other = Part("other", log, lambda: time.sleep(0.2))
    with pytest.raises(StepError, match="build failed"):
        in_dependency_order([hdf5, package, its_test, other], {package: [hdf5], its_test: [package]}, jobs=1)
    ended = [n for e, n in log if e == "end"]
    assert ended == ["other"], log
    assert "the builds that do not need it go on to their end" in capsys.readouterr().err


def test_a_plan_that_needs_a_component_it_does_not_build_is_refused():
    log = []
    a, missing = Part("a", log), Part("missing", log)
    with pytest.raises(ValueError, match="does not build: missing"):
        in_dependency_order([a], {a: [missing]}, jobs=1)
    assert log == []


def test_an_interrupt_starts_nothing_more_and_is_raised_once_the_running_builds_end():
    log, meet = [], threading.Barrier(2, timeout=10)

    def interrupt():  # Ctrl-C (a SIGINT to the main thread) while two builds run
        meet.wait()
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        time.sleep(3)  # a build that goes on: the main thread stops the plan meanwhile, however loaded the machine

    a, b, c = Part("a", log, interrupt), Part("b", log), Part("c", log, lambda: meet.wait() or time.sleep(0.5))
    with pytest.raises(KeyboardInterrupt):
        in_dependency_order([a, c, b], {b: [a]}, jobs=1)
    assert sorted(n for e, n in log if e == "end") == ["a", "c"], log  # b, ready after a, never started
