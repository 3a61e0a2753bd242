# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The differential fuzzer's fixed workloads (packages/h5fuzz/regressions.yaml) on every
stack through every driver variant, against MPI-IO (lib/h5stack/verify/fuzz.py), and the
harness's own behaviour: a fault is caught, minimised and printed with its replay."""

import dataclasses
import os

import pytest

from conftest import FULL, stacks_under_test
from h5stack.base.ui import StepError
from h5stack.machine.launch import Launcher
from h5stack.verify import fuzz


def _pairs():
    """(stack, variant) of every stack under test: every multifile variant it offers; the DSM
    distributions over the plain stacks, one after the other (every distribution runs, on one
    stack; each plain stack runs one or more; the twins' DSM is the same code, `./h5stack
    fuzz` runs it there too)."""
    pairs, dsm_at = [], []
    for stack in stacks_under_test():
        desc = stack.description()
        if not desc:
            continue
        offered = fuzz.variants(desc)
        pairs += [(stack.name, v) for v in offered if not v.startswith("dsm:")]
        dsm = [v for v in offered if v.startswith("dsm:")]
        if dsm and not stack.variant:
            dsm_at.append((stack.name, dsm))
    for i, (stack, dsm) in enumerate(dsm_at):
        pairs += [(stack, v) for v in dsm[i :: len(dsm_at)]]
    return pairs


def _applicable(entries, stack, variant):
    """The regression entries a pair can run (fuzz.applies: the DSM has no stamps; from
    grammar 5 on it runs the workloads with all its clients, Case.all_ranks)."""
    return [e for e in entries if fuzz.applies(variant, e.get("grammar", 1), e.get("case", ""))]


def _kind(variant):
    return variant.split(":")[0]


def _selection(pairs, entries):
    """[(stack, variant, entry)]: with --full every applicable entry on every pair. By default
    each fixed case once on every kind of variant (multifile, multifile-linked, mpiposix, dsm;
    the stacks in turn), and one seed on every pair: first each seed on a pair of its own
    (the seeds that fewest pairs can run go first), then on the other pairs the seed run
    least so far; where the seeds outnumber the pairs, each seed not run yet on the pair
    that runs fewest workloads so far."""
    if FULL:
        return [(s, v, e) for s, v in pairs for e in _applicable(entries, s, v)]
    chosen, load = [], {p: 0 for p in pairs}
    for e in (e for e in entries if "case" in e):
        for kind in sorted({_kind(v) for _, v in pairs}):
            able = [p for p in pairs if _kind(p[1]) == kind and e in _applicable(entries, *p)]
            if able:
                p = min(able, key=lambda p: load[p])
                load[p] += 1
                chosen.append((*p, e))
    seeds = [e for e in entries if "seed" in e]
    can = {p: [e for e in _applicable(seeds, *p)] for p in pairs}
    given, runs = {}, [0] * len(seeds)
    for i in sorted(range(len(seeds)), key=lambda i: sum(seeds[i] in c for c in can.values())):
        free = [p for p in pairs if p not in given and seeds[i] in can[p]]
        if free:
            given[free[0]], runs[i] = seeds[i], 1
    for p in pairs:
        if p not in given and can[p]:
            i = min((i for i in range(len(seeds)) if seeds[i] in can[p]), key=lambda i: runs[i])
            given[p], runs[i] = seeds[i], runs[i] + 1
    chosen += [(*p, given[p]) for p in pairs if p in given]
    for p in given:
        load[p] += 1
    for i in (i for i in range(len(seeds)) if not runs[i]):  # more seeds than pairs
        able = [p for p in pairs if seeds[i] in can[p]]
        if able:
            p = min(able, key=lambda p: load[p])
            load[p] += 1
            chosen.append((*p, seeds[i]))
    return chosen


def _case(stack, variant, e):
    # the DSM with 2 clients beside 2 servers, which busy-poll on this machine's 2 cores
    ranks = min(e["ranks"], 2) if variant.startswith("dsm:") else e["ranks"]
    return fuzz.regression_case(stack, variant, e, ranks=ranks)


def _cases():
    pairs = _pairs()
    if not pairs:
        return [pytest.param(None, id="no-stacks", marks=pytest.mark.skip(reason="no stack is built"))]
    cases = []
    for stack, variant, e in _selection(pairs, fuzz.regressions()):
        what = e.get("case") or f"{e['seed']}g{e.get('grammar', 1)}"
        cases.append(pytest.param(_case(stack, variant, e), id=f"{stack}-{variant}-{what}"))
    return cases


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    """A runner with its work in a directory of its own (`./h5stack fuzz`, which other
    tests run beside this file, works in the cache's fuzz/)."""
    fuzz.check_capabilities()
    return fuzz.Runner(workroot=str(tmp_path_factory.mktemp("fuzz")))


@pytest.mark.parametrize("case", _cases())
def test_regression_workload(runner, case):
    """The workload gives through the driver what MPI-IO gives (h5diff) and what its
    model says (value by value), during and after the session."""
    outcome = runner.run(case)
    assert outcome.ok, fuzz.report_failure(runner, outcome, minimise=False)


def test_a_regression_seed_that_plans_otherwise_is_refused(runner):
    """A seed whose plan digest is not the recorded one (the generator changed) fails before
    anything runs, naming both digests."""
    entry = next(e for e in fuzz.regressions() if "seed" in e)
    stack = next(s for s, _ in _pairs())
    case = fuzz.regression_case(stack, "multifile", entry)
    # the recorded plan holds (the regression workloads run it): the stack's h5fuzz agrees
    assert case.plan
    runner.check_plan(case, fuzz.process_env(runner.desc(stack)))
    outcome = runner.run(dataclasses.replace(case, plan="0" * 16))
    assert not outcome.ok and f"recorded as {'0' * 16}" in outcome.message and case.plan in outcome.message, outcome


def test_every_driver_variant_and_distribution_runs():
    """The rotation leaves no variant of the drivers out."""
    variants = {v for _, v in _pairs()}
    assert {"multifile", "multifile-linked", "mpiposix"} <= variants
    assert {f"dsm:{d}" for d in fuzz.DSM_DISTRIBUTIONS} <= variants


def test_the_selection_runs_every_pair_and_every_regression_entry():
    """Every pair runs a seed, every seed runs, every fixed case runs on every kind of variant
    that can run it."""
    pairs, entries = _pairs(), fuzz.regressions()
    chosen = _selection(pairs, entries)
    assert {(s, v) for s, v, e in chosen if "seed" in e} == set(pairs)
    assert {id(e) for _, _, e in chosen} == {id(e) for e in entries}
    for e in (e for e in entries if "case" in e):
        able = {_kind(v) for s, v in pairs if e in _applicable(entries, s, v)}
        assert {_kind(v) for _, v, c in chosen if c is e} == able, e["case"]


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


class FaultyReference(fuzz.Runner):
    """A reference whose MPI-IO run loses writes: one process runs the plan of all the
    case's ranks, so the other ranks' parts are never written (as if MPI-IO dropped them)."""

    def reference_command(self, case, path):
        argv = ["h5fuzz", path, *self._fuzz_args(case), "--writer-ranks", str(case.ranks)]
        return self.launcher.command(1, argv)


def test_a_reference_that_differs_from_the_model_is_an_mpiio_fault(tmp_path):
    """The reference is judged against the model first: a wrong MPI-IO file is reported as
    an MPI-IO fault, with the command that wrote it, and not used as the truth; the variant
    is judged against the model alone (and passes)."""
    stack = next(s for s, v in _pairs() if v == "multifile")
    runner = FaultyReference(workroot=str(tmp_path))
    outcome = runner.run(fuzz.Case(stack, "multifile", 1, 2, 20, perturb=False))
    assert "differs from the workload's model" in outcome.mpiio_fault, outcome.mpiio_fault
    assert outcome.ok, fuzz.report_failure(runner, outcome, minimise=False)
    assert any("--verify-only" in step and "--driver sec2" in step for step in outcome.steps), outcome.steps
    assert not any(step.startswith("h5diff") for step in outcome.steps), "compared with a wrong reference"
    text = fuzz.report_mpiio_fault(outcome)
    assert text.startswith(f"MPI-IO FAULT: {stack} seed 1 (2 ranks, 20 operations)"), text
    assert "--writer-ranks 2" in text and "FAILED" in text, text


class BrokenReference(fuzz.Runner):
    """A reference that HDF5 with MPI-IO cannot run: the program ends with exit 3 (as
    h5fuzz does when an HDF5 call fails on a rank)."""

    def reference_command(self, case, path):
        return ["sh", "-c", "echo 'h5fuzz: rank 0: operation 7 failed: H5Dwrite /d1' >&2; exit 3"]


def test_a_reference_that_cannot_run_is_reported_once_and_its_variants_judged_by_the_model(tmp_path):
    """A workload HDF5 with MPI-IO cannot run is reported once, as such, with its replay;
    its variants still run and are judged against the model alone (not compared with the
    missing reference): right ones pass, and the run's status is 0."""
    stack = next(s for s, v in _pairs() if v == "multifile")
    runner, tally = BrokenReference(workroot=str(tmp_path)), fuzz.Tally()
    reports = []
    for variant in ("multifile", "multifile-linked"):
        outcome = runner.run(fuzz.Case(stack, variant, 1, 2, 20, perturb=False))
        assert outcome.ok and "exit 3" in outcome.reference_failed, fuzz.report_failure(runner, outcome, False)
        assert any("--verify-only" in step and "--driver sec2" in step for step in outcome.steps), outcome.steps
        assert not any(step.startswith("h5diff") for step in outcome.steps), "compared with a failed reference"
        reports += tally.add(outcome)
        assert fuzz.case_record(outcome)["verdict"] == "ok" and fuzz.case_record(outcome)["reference_failed"]
        assert not fuzz.case_record(outcome)["h5diff"]  # nothing to compare with
    assert len(reports) == 1 and reports[0].startswith(f"REFERENCE FAILS: {stack} seed 1 (grammar 1)"), reports
    assert "operation 7 failed" in reports[0] and "judged against the model alone" in reports[0]
    assert not tally.failures and len(tally.broken) == 1 and tally.unjudged == 0
    assert "1 workload(s) the MPI-IO reference cannot run (0 case(s) failing with it, not judged)" in tally.summary(1.0)


class BrokenReferenceAndVariant(BrokenReference):
    """The reference cannot run the workload, and the variant's write fails too."""

    def _multifile(self, case, env, work, out):
        raise fuzz.CaseFailed("exit 3: h5fuzz: rank 0: operation 7 failed: H5Dwrite /d1")


def test_a_variant_failing_where_the_reference_fails_is_not_judged_and_fails_the_run(tmp_path):
    """A variant that fails where the reference fails too may meet the same fault of HDF5:
    NOT JUDGED, not minimised, counted apart from the variants' own failures, and it
    makes the run's status 1 (fuzz.run: failures or unjudged)."""
    stack = next(s for s, v in _pairs() if v == "multifile")
    runner, tally = BrokenReferenceAndVariant(workroot=str(tmp_path)), fuzz.Tally()
    outcome = runner.run(fuzz.Case(stack, "multifile", 1, 2, 20, perturb=False))
    reports = tally.add(outcome)
    assert not outcome.ok and reports[-1] is fuzz.FAILED, reports
    assert not tally.failures and tally.unjudged == 1 and fuzz.case_record(outcome)["verdict"] == "unjudged"
    text = fuzz.report_failure(runner, outcome)  # minimise=True: an unjudged case is not minimised
    assert text.startswith(f"NOT JUDGED (the MPI-IO reference fails too): {outcome.case.label()}"), text
    assert "minimised" not in text and "operation 7 failed" in text, text
    assert "(1 case(s) failing with it, not judged)" in tally.summary(1.0)


class ReferenceFailingNowAndThen(fuzz.Runner):
    """A reference that ran once (the first run), and then fails in the operation where the
    variant fails (an HDF5 call failing now and then); the variant fails there."""

    def reference(self, case, env, out):
        return fuzz.Reference(str(self.workroot), "the first run of the reference")

    def reference_command(self, case, path):
        return ["sh", "-c", "echo 'h5fuzz: rank 1: operation 10 failed: H5Dset_extent /g1/d2' >&2; exit 3"]

    def _multifile(self, case, env, work, out):
        raise fuzz.CaseFailed(f"exit 3: h5fuzz: rank {self.rank}: operation {self.op} failed: H5Dset_extent /g1/d2")


@pytest.mark.parametrize("op, unjudged", [(10, True), (11, False)])
def test_a_variant_failing_in_an_hdf5_call_runs_the_reference_again(tmp_path, op, unjudged):
    """A variant failing in an HDF5 call where the reference ran: the reference runs again;
    failing in the same operation, the variant is not judged (HDF5 fails the workload now
    and then); in another operation, or never, the failure is the variant's."""
    stack = next(s for s, v in _pairs() if v == "multifile")
    runner = ReferenceFailingNowAndThen(workroot=str(tmp_path))
    runner.rank, runner.op = 0, op
    outcome = runner.run(fuzz.Case(stack, "multifile", 1, 2, 20, perturb=False))
    assert not outcome.ok
    again = [step for step in outcome.steps if step.startswith("sh -c")]
    assert len(again) == (1 if unjudged else fuzz.REFERENCE_TRIES), outcome.steps
    assert bool(outcome.reference_failed) == unjudged, outcome.reference_failed
    assert fuzz.case_record(outcome)["verdict"] == ("unjudged" if unjudged else "failed")
    if unjudged:
        assert "fails operation 10, H5Dset_extent, now and then" in outcome.reference_failed


def test_a_seed_in_two_grammars_has_two_references(runner):
    """The same seed is another workload in another grammar: each gets its own reference."""
    stack = next(s for s, v in _pairs() if v == "multifile")
    env = fuzz.process_env(runner.desc(stack))
    refs = [
        runner.reference(case, env, fuzz.Outcome(case, False))
        for case in (fuzz.Case(stack, "multifile", 2, 2, 12, grammar=g, perturb=False) for g in (1, 2))
    ]
    assert refs[0].path != refs[1].path and not refs[0].failed and not refs[1].failed
    assert "--grammar 1" in refs[0].command and "--grammar 2" in refs[1].command


class WrongResult(fuzz.Runner):
    """A variant that leaves the file of another workload (seed + 1) in place of its own."""

    def _multifile(self, case, env, work, out):
        path = os.path.join(work, "other.h5")
        argv = ["h5fuzz", path, "--seed", str(case.seed + 1), "--ops", str(case.ops)]
        self._run(out, env, self.launcher.command(case.ranks, argv), work)
        return path


def test_a_result_is_judged_against_the_model_before_mpiio(tmp_path):
    """The variant's file is checked against the model first: its failure says so, and no
    comparison with MPI-IO runs on a file the model already refused."""
    stack = next(s for s, v in _pairs() if v == "multifile")
    runner = WrongResult(workroot=str(tmp_path))
    outcome = runner.run(fuzz.Case(stack, "multifile", 1, 2, 20, perturb=False))
    assert not outcome.ok and not outcome.mpiio_fault
    assert outcome.message.startswith("the result differs from the workload's model"), outcome.message
    assert not any(step.startswith("h5diff") for step in outcome.steps), outcome.steps


@pytest.mark.parametrize("stack", sorted({s for s, v in _pairs() if v == "multifile" and "-hdf5-2" in s}) or ["none"])
def test_a_2x_stack_compares_the_latest_format_whole(tmp_path, stack):
    """A workload of grammar 2 (the latest format, which HDF5 1.14's tools cannot read) on a
    2.x stack: judged against the model, then compared whole with MPI-IO's file by the
    stack's h5diff, of its own HDF5 version (a stack built from the crate: Debian's serial
    2.x tools, stacks.yaml `debian_tools`)."""
    if stack == "none":
        pytest.skip("no 2.x stack is built")
    runner = fuzz.Runner(workroot=str(tmp_path))
    desc = runner.desc(stack)
    assert desc["tools"]["hdf5_version"] == desc["hdf5_version"], desc["tools"]
    outcome = runner.run(fuzz.Case(stack, "multifile", 3, 2, 24, grammar=2, perturb=False))
    assert outcome.ok, fuzz.report_failure(runner, outcome, minimise=False)
    assert outcome.compared and any(step.startswith("h5diff") for step in outcome.steps), outcome.steps
    assert fuzz.case_record(outcome)["h5diff"]


def test_undefined_elements_are_left_out_of_the_whole_file_comparison(runner):
    """Seed 1008202500 (5 ranks, 31 operations; the plan of h5fuzz's first grammar) creates
    /g1/g2/d11 (contiguous, default fill value, fill time never) and never writes it:
    MPICH's ROMIO fills it with 0xFF (its data-sieving buffer, written beyond the end of
    the file), multifile leaves zeros. The model leaves those elements undefined: h5diff
    leaves the dataset out, and the case passes."""
    stack = "mpich-hdf5-1.14"
    case = fuzz.Case(stack, "multifile", 1008202500, 5, 31, perturb=False)
    outcome = runner.run(case)
    assert outcome.ok, fuzz.report_failure(runner, outcome, minimise=False)
    ref = runner.reference(case, fuzz.process_env(runner.desc(stack)), fuzz.Outcome(case, False))
    assert ("/g1/g2/d11", 15393, 15393) in ref.undefined, ref.undefined  # ROMIO's 0xFF: not zero
    assert any(step.startswith("h5diff --exclude-path") and " /g1/g2/d11 " in step for step in outcome.steps)


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


def test_merge_windows_are_few_records_but_never_more_than_64_windows():
    """The fuzzer's merges read the index in address windows of 2 to 17 records by seed;
    a directory of many records gets at most 64 windows (each window reads every index
    again: windows of a few records over tens of thousands ran past the step's limit)."""
    assert [fuzz.window_records(s, 100) for s in (0, 15, 16)] == [2, 17, 2]
    assert fuzz.window_records(3, 22_500) == 352 and -(-22_500 // 352) <= 64
    assert fuzz.window_records(3, 0) == 5
