# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The differential fuzzer's fixed workloads (packages/h5fuzz/regressions.yaml) on every
stack through every driver variant, against MPI-IO (lib/h5stack/fuzz.py), and the
harness's own behaviour: a fault is caught, minimised and printed with its replay."""

import os

import pytest

from conftest import Stacks, h5stack
from h5stack import fuzz
from h5stack.launch import Launcher
from h5stack.ui import StepError


def _pairs():
    """(stack, variant) of every stack: every multifile variant it offers; the DSM
    distributions rotate over the plain stacks (each distribution runs on one, each plain
    stack runs one; the twins' DSM is the same code, `./h5stack fuzz` runs it there too)."""
    pairs, dsm_stacks = [], 0
    for stack in Stacks().stacks.values():
        desc = stack.description()
        if not desc:
            continue
        offered = fuzz.variants(desc)
        dsm = [v for v in offered if v.startswith("dsm:")]
        pairs += [(stack.name, v) for v in offered if not v.startswith("dsm:")]
        if dsm and not stack.variant:
            pairs.append((stack.name, dsm[dsm_stacks % len(dsm)]))
            dsm_stacks += 1
    return pairs


def _cases():
    entries, cases = fuzz.regressions(), []
    pairs = _pairs()
    if not pairs:
        return [pytest.param(None, id="no-stacks", marks=pytest.mark.skip(reason="no stack is built"))]
    for i, (stack, variant) in enumerate(pairs):
        # every pair runs the fixed cases, and one seed of the list in turn; the DSM (no
        # stamps: the metadata case is multifile's) with 2 clients beside 2 servers, which
        # busy-poll on this machine's 2 cores
        dsm = variant.startswith("dsm:")
        seeds = [e for e in entries if "seed" in e]
        fixed = [e for e in entries if "case" in e and not (dsm and e["case"] == "metadata")]
        for e in fixed + ([seeds[i % len(seeds)]] if seeds else []):
            ranks = min(e["ranks"], 2) if dsm else e["ranks"]
            case = fuzz.Case(stack, variant, e.get("seed", 0), ranks, e.get("ops", 60), case=e.get("case", ""))
            cases.append(pytest.param(case, id=f"{stack}-{variant}-{e.get('case') or e['seed']}"))
    return cases


@pytest.fixture(scope="module")
def runner():
    fuzz.check_capabilities()
    return fuzz.Runner()


@pytest.mark.parametrize("case", _cases())
def test_regression_workload(runner, case):
    """The workload gives through the driver what MPI-IO gives (h5diff) and what its
    model says (value by value), during and after the session."""
    outcome = runner.run(case)
    assert outcome.ok, fuzz.report_failure(runner, outcome, minimise=False)


def test_every_driver_variant_and_distribution_runs():
    """The rotation leaves no variant of the drivers out."""
    variants = {v for _, v in _pairs()}
    assert {"multifile", "multifile-linked", "mpiposix"} <= variants
    assert {f"dsm:{d}" for d in fuzz.DSM_DISTRIBUTIONS} <= variants


def test_a_fault_is_caught_minimised_and_replayable(runner, tmp_path):
    """A driver that loses data (multifile with its ordering of collective writes and
    metadata switched off by its test hook H5MF_TEST_UNORDERED) fails the straddle case;
    the report names the case, its files and the command that replays it."""
    stack = next(s for s, v in _pairs() if v == "multifile")
    case = fuzz.Case(stack, "multifile", 0, 4, case="straddle")
    os.environ["H5MF_TEST_UNORDERED"] = "1"
    try:
        outcome = runner.run(case)
    finally:
        del os.environ["H5MF_TEST_UNORDERED"]
    assert not outcome.ok, "the unordered driver passed: the fuzzer cannot see the fault it is for"
    text = fuzz.report_failure(runner, outcome, minimise=False)
    assert f"replay: ./h5stack fuzz --stack {stack} --driver multifile --case straddle --ranks 4" in text
    assert "FAILED" in text and outcome.workdir in text


def test_cli_rejects_bad_arguments():
    for args in (["--seeds", "0"], ["--time", "inf"], ["--ops", "-3"], ["--driver", "nosuch", "--seeds", "1"]):
        proc = h5stack("fuzz", *args)
        assert proc.returncode != 0, args
        assert "error" in proc.stderr or "usage" in proc.stderr, proc.stderr


def test_srun_launches_mpmd_from_a_multi_prog_file(tmp_path):
    """The DSM's servers and clients in one job step: ranks numbered in order of the groups."""
    cmd = Launcher("srun").mpmd([(2, ["h5dsm-server", "--size", "16m"]), (3, ["h5fuzz", "mem.h5"])], str(tmp_path))
    assert cmd[0] == "srun" and "--ntasks=5" in cmd and "--distribution=cyclic" in cmd
    assert (tmp_path / "multi-prog.conf").read_text() == "0-1 h5dsm-server --size 16m\n2-4 h5fuzz mem.h5\n"
    assert Launcher().mpmd([(2, ["a"]), (3, ["b", "x"])], str(tmp_path)) == [
        "mpiexec",
        "-n",
        "2",
        "a",
        ":",
        "-n",
        "3",
        "b",
        "x",
    ]
    with pytest.raises(StepError, match="cannot carry"):
        Launcher("srun").mpmd([(1, ["a b"])], str(tmp_path))


def test_srun_outside_an_allocation_is_refused_with_the_reason():
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    with pytest.raises(StepError, match="inside a Slurm allocation"):
        Launcher("srun").preflight(env)
