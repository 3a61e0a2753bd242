# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The h5stack command line: help and errors for bad input, before anything is set up."""

import os

import pytest

from conftest import h5stack
from h5stack.base.ui import StepError
from h5stack.machine.launch import Launcher


def test_help_lists_commands():
    proc = h5stack("--help", check=True)
    for command in ("setup", "list", "env", "run", "test"):
        assert command in proc.stdout


def test_unknown_command_is_a_usage_error():
    proc = h5stack("frobnicate")
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr


def test_env_unknown_stack_lists_valid_names(stacks):
    proc = h5stack("env", "nompi-hdf5-9")
    assert proc.returncode == 1
    assert "unknown stack 'nompi-hdf5-9'" in proc.stderr
    for name in stacks.names():
        assert name in proc.stderr
    assert proc.stdout == ""


def test_run_unknown_system_lists_valid_names():
    proc = h5stack("run", "--system", "nowhere", "--no-setup")
    assert proc.returncode == 1
    assert "unknown system 'nowhere'" in proc.stderr
    assert "generic" in proc.stderr


def test_run_unknown_stack_lists_valid_names(stacks):
    proc = h5stack("run", "--stack", "mpich-hdf5-0.1", "--no-setup")
    assert proc.returncode == 1
    assert "unknown stack 'mpich-hdf5-0.1'" in proc.stderr
    assert stacks.names()[0] in proc.stderr


def test_setup_bad_tarball_argument():
    proc = h5stack("setup", "--tarball", "1.14")
    assert proc.returncode == 1
    assert "expected SERIES=PATH" in proc.stderr
    proc = h5stack("setup", "--tarball", "1.99=/nonexistent.tar.gz")
    assert proc.returncode == 1
    assert "unknown series '1.99'" in proc.stderr


def test_fuzz_rejects_bad_arguments_before_any_set_up():
    for args in (["--seeds", "0"], ["--time", "inf"], ["--ops", "-3"], ["--driver", "nosuch", "--seeds", "1"]):
        proc = h5stack("fuzz", *args)
        assert proc.returncode != 0, args
        assert "error" in proc.stderr or "usage" in proc.stderr, proc.stderr
        assert "h5stack: h5fuzz (" not in proc.stderr, proc.stderr  # refused before any set-up


def test_srun_outside_an_allocation_is_refused_with_the_reason():
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    with pytest.raises(StepError, match="inside a Slurm allocation"):
        Launcher("srun").preflight(env)
