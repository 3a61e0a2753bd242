# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The crash-state explorer (lib/h5stack/verify/crash/) on a stack: a bounded exploration
of a write session and a merge, the crash states kept as regressions, and a negative
control (a metafile written in place without fsync is caught). Its model and strace
parser alone: tests/unit/test_crash_model.py."""

import dataclasses
import re
import shutil

import pytest

from conftest import Stacks, in_turn
from h5stack.verify import crash
from h5stack.verify.crash import Choice, Op

STACK = "mpich-hdf5-1.14"


# -- on a stack -----------------------------------------------------------------------
def _stack_env():
    if shutil.which("strace") is None:
        pytest.skip("strace is missing (requirements/debian.txt)")
    if not Stacks().get(STACK).status()[0]:
        pytest.skip(f"stack {STACK} is not built")
    return crash.stack_environment(STACK)


@pytest.fixture(scope="module")
def env():
    return _stack_env()


def _known(fault):
    """A fault the regression file names as not yet fixed (a fixed one is a regression)."""
    return any(e.get("xfail") and re.search(e["match"], fault.message) for e in crash.regressions())


@pytest.mark.parametrize(
    "spec",
    [
        "write:5:4:1",
        "merge:5:4:1",
        "write:6:4:2",
        "pmerge:5:4:2",
        "killed:6:4:2",
        "dump:5:8:2",
        "hwrite:5:4:1",
        "hmerge:5:4:1",
    ],  # fmt: skip
)
def test_bounded_exploration_finds_only_known_faults(env, tmp_path, spec):
    """A sample of crash points of short workloads (2 ranks too, the parallel merge of 2
    processes, a sync=off session in the state a killed process leaves, the DSM server's
    dump, a session and a merge in the head layout): h5mf never dies or hangs, and every
    fault found is one the regression file names (not yet fixed)."""
    w = crash.Workload.parse(spec)
    rec = crash.record(w, env, str(tmp_path))
    tally = crash.Tally()
    crash.explore(rec, crash.Oracle(rec, env, str(tmp_path)), STACK, tally, seed=7, samples=2, most=10)
    assert tally.points == min(10, len(crash.crash_points(rec.ops))) and tally.states >= tally.points
    unknown = [f.report() for f, _ in tally.faults.values() if not _known(f)]
    assert not unknown, "\n\n".join(unknown)


def _regression_params():
    """Entries not yet fixed, one by one; fixed ones once per workload (explored whole)."""
    entries, fixed = crash.regressions(), {}
    for e in entries:
        if not e.get("xfail"):
            fixed.setdefault(e["workload"], []).append(e)
    open_ = [
        pytest.param(
            e, id=f"{e['workload']}-{e['point']}-{e['state']}", marks=pytest.mark.xfail(reason=e["xfail"], strict=True)
        )
        for e in entries
        if e.get("xfail")
    ]
    return open_ + [pytest.param({"workload": w, "fixed": es}, id=f"{w}-fixed") for w, es in fixed.items()]


@pytest.mark.parametrize("entry", _regression_params())
def test_regression_state(env, tmp_path, entry):
    """A fault not yet fixed: its kept crash state is judged right (xfail while it is
    there). A fixed one: no crash point of its workload, every enumerated state, shows
    any fault (the fix changed the log, so the state has another number now); by default
    every third crash point, in turn by the day (--full: every one)."""
    rec = crash.record(crash.Workload.parse(entry["workload"]), env, str(tmp_path))
    oracle = crash.Oracle(rec, env, str(tmp_path))
    if "fixed" not in entry:
        fault = crash.replay_state(rec, oracle, STACK, entry["point"], entry["state"])
        assert fault is None, fault.report()
        return
    tally, points = crash.Tally(), in_turn(crash.crash_points(rec.ops), every=3)
    crash.explore(rec, oracle, STACK, tally, most=10**6, only=points)
    assert tally.points == len(points), "not every crash point of the day's turn was tried"
    faults = [f.report() for f, _ in tally.faults.values()]
    assert not faults, "\n\n".join(faults)


def metafile_in_place(ops):
    """The negative control: the log with every commit's metafile written in place
    (truncated, then rewritten) with no fsync, instead of a synced temporary file renamed."""
    model, out, tmp, meta = crash.Model(), [], set(), None
    for op in ops:
        if op.kind == "create" and op.name.startswith("metafile.tmp") and meta is not None:
            tmp.add(op.ino)
            out.append(Op("truncate", ino=meta, off=0))
            continue
        if op.kind in ("write", "fsync") and op.ino in tmp:
            if op.kind == "write":
                out.append(dataclasses.replace(op, ino=meta))
            continue
        if op.kind == "rename" and op.name2 == "metafile":
            if meta is not None:
                continue
            meta = model.dirs[op.dir].live[op.name]
        model.apply(op)
        out.append(op)
    return out, meta


def claims(ops, meta):
    """For each crash point of the broken log, the epochs its writer believes durable (the
    last metafile it wrote in place)."""
    claimed, durable = 0, []
    for op in ops:
        m = re.search(rb"^committed (\d+)$", op.data, re.M) if op.kind == "write" and op.ino == meta else None
        claimed = int(m.group(1)) if m else claimed
        durable.append(claimed)
    return durable


def test_negative_control_a_metafile_written_in_place_is_caught(env, tmp_path):
    rec = crash.record(crash.Workload.parse("write:5:4:1"), env, str(tmp_path))
    ops, meta = metafile_in_place(rec.ops)
    broken = dataclasses.replace(rec, ops=ops)
    oracle = crash.Oracle(broken, env, str(tmp_path))
    oracle.golden, oracle.durable = crash.commits(rec.ops)[0], claims(ops, meta)  # what the writer claims
    points = [i + 2 for i, op in enumerate(ops) if op.kind == "truncate" and op.ino == meta]  # after the rewrite
    assert len(points) >= 2, "fewer than two metafile commits after the first"
    model = crash.model_at(ops, points[1], broken.initial)
    faults = [oracle.judge(crash.materialise(model, c), points[1]) for c in crash.enumerate_choices(model)]
    caught = [f for f in faults if f and "no directory out.h5" not in f]
    assert caught, "the broken protocol was not caught"
    assert oracle.judge(crash.materialise(model, Choice("all")), points[1]) is None  # a process crash is fine


@pytest.mark.parametrize("spec, kind", [("pmerge:5:4:2", "neither"), ("dump:5:8:2", "torn")])
def test_negative_control_file_fsyncs_left_out_are_caught(env, tmp_path, spec, kind):
    """The log with every fsync of a file left out (the parallel merge's processes' syncs
    of the output before the swap; the DSM server's sync of a dump before its rename): a
    power loss after the rename keeps the final name over bytes that did not persist,
    and the explorer must say so."""
    rec = crash.record(crash.Workload.parse(spec), env, str(tmp_path))
    model, ops = crash.Model(rec.initial), []
    for op in rec.ops:
        if op.kind == "fsync" and op.ino in model.files:
            continue
        model.apply(op)
        ops.append(op)
    assert len(ops) < len(rec.ops), f"{spec} synced no file"
    broken = dataclasses.replace(rec, ops=ops)
    tally = crash.Tally()
    crash.explore(broken, crash.Oracle(broken, env, str(tmp_path)), STACK, tally, most=10**6)
    kinds = {f.kind() for f, _ in tally.faults.values()}
    assert kind in kinds, f"the unsynced {spec} was not caught: {kinds}"
