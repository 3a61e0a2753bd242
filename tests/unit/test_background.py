# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The CPU group of a tenth of a process's weight (lib/h5stack/base/background.py): which hierarchy it
is made in, and on this machine, where one can be made, that a command started in it and
the processes it starts (in a session of their own too) are inside."""

import errno
import os
import subprocess
import time

import pytest

from h5stack.base import background


def _hierarchies(monkeypatch, tmp_path, v1=False, controllers=None, subtree=""):
    v1_dir, v2_dir = tmp_path / "cpu", tmp_path / "unified"
    v1_dir.mkdir()
    v2_dir.mkdir()
    if v1:
        (v1_dir / "cpu.shares").write_text("1024\n")
    if controllers is not None:
        (v2_dir / "cgroup.controllers").write_text(controllers + "\n")
        (v2_dir / "cgroup.subtree_control").write_text(subtree + "\n")
    monkeypatch.setattr(background, "V1", str(v1_dir))
    monkeypatch.setattr(background, "V2", str(v2_dir))
    return v1_dir, v2_dir


def test_cgroup_v1s_cpu_hierarchy_first(monkeypatch, tmp_path):
    v1, _ = _hierarchies(monkeypatch, tmp_path, v1=True, controllers="cpu memory", subtree="cpu")
    assert background._hierarchy() == (str(v1), "cpu.shares", "100")


def test_the_unified_hierarchy_with_its_cpu_controller_enabled_for_children(monkeypatch, tmp_path):
    _, v2 = _hierarchies(monkeypatch, tmp_path, controllers="cpuset cpu io", subtree="memory")
    assert background._hierarchy() == (str(v2), "cpu.weight", "10")
    assert (v2 / "cgroup.subtree_control").read_text() == "+cpu"


@pytest.mark.parametrize("controllers", [None, "memory pids"])
def test_no_group_without_a_cpu_controller(monkeypatch, tmp_path, controllers):
    _hierarchies(monkeypatch, tmp_path, controllers=controllers)
    assert background._hierarchy() is None
    with background.cpu_group("t") as group:
        assert group is None


def test_a_group_that_cannot_be_made_is_none_and_said(monkeypatch, tmp_path, capsys):
    _hierarchies(monkeypatch, tmp_path, v1=True)

    def refused(path, exist_ok=False):
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(background.os, "makedirs", refused)
    with background.cpu_group("t") as group:
        assert group is None
    err = capsys.readouterr().err
    assert "no CPU group of a low weight" in err and "Permission denied" in err, err


def test_a_command_and_its_descendants_run_inside_the_group():
    with background.cpu_group("h5stack-unit") as group:
        if group is None:
            pytest.skip("no CPU group can be made here (not root, or no cpu controller)")
        weight = "cpu.shares" if os.path.exists(os.path.join(group, "cpu.shares")) else "cpu.weight"
        assert open(os.path.join(group, weight)).read().strip() in ("100", "10")
        cmd = background.command_in(group, ["sh", "-c", "cat /proc/self/cgroup; setsid cat /proc/self/cgroup"])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        name = os.path.basename(group)
        assert out.count(f"/{name}\n") == 2, out  # the command, and a child in a session of its own
    assert not os.path.exists(group)  # removed once empty


def test_kill_all_ends_every_process_of_the_group_and_the_group_goes():
    with background.cpu_group("h5stack-unit") as group:
        if group is None:
            pytest.skip("no CPU group can be made here (not root, or no cpu controller)")
        started = subprocess.Popen(background.command_in(group, ["sh", "-c", "sleep 300 & setsid sleep 300 & wait"]))
        for _ in range(50):  # the three processes in the group
            if len(open(os.path.join(group, "cgroup.procs")).read().split()) == 3:
                break
            time.sleep(0.1)
        assert background.kill_all(group) == 3
        assert started.wait(timeout=10) == -9
        assert open(os.path.join(group, "cgroup.procs")).read().split() == []
    assert not os.path.exists(group)
    assert background.kill_all(group) == 0  # a group that is gone has nothing to kill


def test_only_the_groups_of_ended_runs_are_swept(monkeypatch, tmp_path):
    v1, _ = _hierarchies(monkeypatch, tmp_path, v1=True)
    ended, running = v1 / "h5stack-t-999999999", v1 / f"h5stack-t-{os.getppid()}"
    ended.mkdir()
    running.mkdir()
    monkeypatch.setattr(background, "command_in", lambda group, cmd: ["true"])
    with background.cpu_group("h5stack-t") as group:
        assert group == str(v1 / f"h5stack-t-{os.getpid()}")
    assert not ended.exists() and running.exists()
