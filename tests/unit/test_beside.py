# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Work beside other work (base/beside.py): it runs while the block runs, nicer (its
processes too), the block's end waits for it and raises its failure."""

import os
import subprocess
import threading

import pytest

from h5stack.base.beside import beside


def _nice_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def test_the_work_runs_during_the_block_nicer_with_its_processes():
    started, seen = threading.Event(), {}

    def work():
        started.set()
        child = subprocess.Popen(["sleep", "0.2"])
        seen["child"] = _nice_of(child.pid)
        child.wait()

    before = os.getpriority(os.PRIO_PROCESS, 0)
    with beside(work, "test", nice=7):
        assert started.wait(10)  # the block runs while the work does
    assert seen["child"] == min(19, before + 7)
    assert os.getpriority(os.PRIO_PROCESS, 0) == before  # this thread's own priority is untouched


def _failing_work(done, message):
    """Work that takes a moment, notes that it ran to its end, then fails."""

    def work():
        threading.Event().wait(0.3)
        done.append(1)
        raise RuntimeError(message)

    return work


def test_the_end_of_the_block_waits_and_raises_the_works_failure():
    done = []
    with pytest.raises(RuntimeError, match="the build beside failed"):
        with beside(_failing_work(done, "the build beside failed"), "test"):
            pass
    assert done == [1]


def test_the_blocks_own_failure_comes_first_and_the_work_is_waited_for():
    done = []
    with pytest.raises(ValueError, match="in the block"):
        with beside(_failing_work(done, "beside"), "test"):
            raise ValueError("in the block")
    assert done == [1]
