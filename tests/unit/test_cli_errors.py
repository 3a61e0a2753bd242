# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The h5stack command line: help and errors for bad input, before anything is set up."""

import os

import pytest

from conftest import ROOT, h5stack
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


def test_every_scheduler_of_a_local_system_is_found():
    """`./h5stack run --system slurm-local|slurm-cluster` finds the module that starts its
    Slurm (a dry run starts nothing)."""
    from h5stack.reframe import regression

    for system, command in regression.SCHEDULERS.items():
        module, started = regression.start_scheduler(system, dry_run=True)
        assert module.__name__ == f"h5stack.machine.{command}" and started is False
        assert callable(module.start_for_run) and callable(module.stop) and callable(module.conf_path)


def test_test_tiers_refuse_what_they_cannot_run():
    """`./h5stack test --unit` never sets up stacks: an integration path or --full is refused,
    and a test path that names nothing is an error before anything is set up."""
    cases = [
        (["test", "--unit", "--", "tests/integration/test_fuzz.py"], "--unit runs tests/unit only"),
        (["test", "--unit", "--full"], "--unit runs no stack"),
        (["test", "--", "tests/unit/no_such_test.py"], "no such test file or directory"),
    ]
    for args, message in cases:
        proc = h5stack(*args)
        assert proc.returncode == 1 and message in proc.stderr, (args, proc.stderr)
        assert "set-up" not in proc.stderr and "running: " not in proc.stderr, proc.stderr


def test_pytest_options_and_their_values_are_not_test_paths():
    from h5stack import testsuite

    args, found = testsuite.test_args(
        ["-k", "house", "-p", "no:cacheprovider", "tests/unit/test_cli_errors.py::test_x"]
    )
    assert found == [os.path.join(ROOT, "tests", "unit", "test_cli_errors.py")]
    assert args[:4] == ["-k", "house", "-p", "no:cacheprovider"] and args[4] == found[0] + "::test_x"


def test_a_clusters_interfaces_are_named_after_its_bridge(monkeypatch):
    from h5stack.machine import cluster

    monkeypatch.setattr(cluster, "BRIDGE", "h5sbr1")
    assert cluster.veth_name("node01") == "h5sbr1-node01"
    monkeypatch.setattr(cluster, "BRIDGE", "a-long-bridge")
    with pytest.raises(StepError, match="too long for the interface"):
        cluster.veth_name("node01")


def test_fuzz_with_time_alone_runs_until_the_time_is_up():
    """--time without --seeds is not cut at the default 10 seeds; either alone, or both."""
    import argparse

    from h5stack.commands import fuzz as command

    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers())
    seeds = {
        argv: command.options(parser.parse_args(["fuzz", *argv])).seeds
        for argv in ((), ("--time", "60"), ("--time", "60", "--seeds", "3"))
    }
    assert seeds == {(): 10, ("--time", "60"): command.UNLIMITED_SEEDS, ("--time", "60", "--seeds", "3"): 3}
