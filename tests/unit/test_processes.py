# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Ending a service's processes (machine/processes.py): SIGTERM, then SIGKILL to what
outlives it, a hook before the SIGKILL, and a zombie counted as ended."""

import subprocess

from h5stack.machine import processes


def _start(script):
    """bash running script, once it has said that it runs (its traps are set)."""
    proc = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True)
    if "echo ready" in script:
        assert proc.stdout.readline() == "ready\n"
    return proc


def test_a_process_that_ends_on_sigterm_is_not_killed():
    proc, hooked = _start("echo ready; exec sleep 60"), []
    assert processes.alive(proc.pid)
    left = processes.end([proc.pid], 10, before_kill=lambda: hooked.append(1))
    assert left == [] and hooked == []
    assert proc.wait(5) == -15  # SIGTERM, not SIGKILL
    assert not processes.alive(proc.pid)


def test_a_process_that_ignores_sigterm_is_killed_after_the_hook():
    proc, hooked = _start("trap '' TERM; echo ready; while :; do sleep 0.1; done"), []
    left = processes.end([proc.pid], 1, before_kill=lambda: hooked.append(1))
    assert left == [] and hooked == [1]
    assert proc.wait(5) == -9


def test_ended_and_absent_pids_are_no_error():
    proc = _start("exit 0")
    proc.wait(5)
    assert processes.end([proc.pid, None], 1) == []


def test_an_unreaped_child_counts_as_ended():
    proc = _start("exit 0")
    assert processes.wait_gone([proc.pid], 5) == []  # a zombie until waited for
    proc.wait(5)
