# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The crash-state explorer (lib/h5stack/verify/crash.py): its persistence model on hand-made
operation logs (no stack needed), the strace parser, a bounded exploration of a write
session and a merge on a stack, the crash states kept as regressions, and a negative
control (a metafile written in place without fsync is caught)."""

import dataclasses
import re
import shutil

import pytest

from conftest import Stacks
from h5stack.verify import crash
from h5stack.verify.crash import ROOT_INO, Choice, Op

STACK = "mpich-hdf5-1.14"


def states(ops, initial=None):
    """Every enumerated crash state after the whole log, as trees."""
    model = crash.model_at(ops, len(ops), initial)
    return [crash.materialise(model, c) for c in crash.enumerate_choices(model)]


def test_a_write_after_the_last_fsync_can_vanish_one_before_cannot():
    ops = [
        Op("create", ino=2, dir=ROOT_INO, name="f"),
        Op("fsync", ino=ROOT_INO),
        Op("write", ino=2, off=0, data=b"A" * 10),
        Op("fsync", ino=2),
        Op("write", ino=2, off=10, data=b"B" * 10),
    ]
    contents = {t["f"] for t in states(ops)}
    assert contents == {b"A" * 10, b"A" * 10 + b"B" * 10}


def test_pending_writes_persist_out_of_order_and_torn_at_4k():
    ops = [
        Op("create", ino=2, dir=ROOT_INO, name="f"),
        Op("fsync", ino=ROOT_INO),
        Op("write", ino=2, off=0, data=b"x" * 100),
        Op("write", ino=2, off=100, data=b"y" * 10000),
    ]
    contents = {t["f"] for t in states(ops)}
    assert b"x" * 100 + b"y" * 10000 in contents and b"" in contents
    assert bytes(100) + b"y" * 10000 in contents  # the later write without the earlier one
    assert b"x" * 100 + b"y" * (4096 - 100) in contents  # torn at the first page boundary
    assert b"x" * 100 + bytes(8092) + b"y" * (10100 - 8192) in contents  # only its last page persisted


def test_a_rename_before_its_directory_fsync_can_be_undone():
    ops = [
        Op("create", ino=2, dir=ROOT_INO, name="meta.tmp"),
        Op("write", ino=2, off=0, data=b"new"),
        Op("fsync", ino=2),
        Op("rename", dir=ROOT_INO, name="meta.tmp", dir2=ROOT_INO, name2="meta"),
    ]
    trees = states(ops)
    assert {"meta": b"new"} in trees and {} in trees and {"meta.tmp": b"new"} in trees
    durable = states([*ops, Op("fsync", ino=ROOT_INO)])
    assert all(t == {"meta": b"new"} for t in durable)


def test_a_create_persists_only_with_its_directory():
    ops = [Op("mkdir", ino=2, dir=ROOT_INO, name="d"), Op("create", ino=3, dir=2, name="f"), Op("fsync", ino=2)]
    trees = states(ops)
    assert {} in trees  # d itself: its parent was never fsynced
    assert all(t.get("d/f") == b"" for t in trees if "d" in t)


def test_directories_are_independent():
    """The changes of two directories persist each with its own fsync: an exchange in the
    parent can be lost while the unlinks in the child persisted (h5mf merge's swap)."""
    initial = {"old": None, "old/metafile": b"m", ".new": b"file"}
    old = crash.Model(initial).dirs[ROOT_INO].live["old"]
    ops = [
        Op("exchange", dir=ROOT_INO, name=".new", dir2=ROOT_INO, name2="old"),
        Op("unlink", dir=old, name="metafile"),  # the old directory, now named .new
    ]
    trees = states(ops, initial)
    assert {"old": None, ".new": b"file"} in trees  # neither the old directory nor the new file


def test_sampled_states_are_replayable():
    ops = [
        Op("create", ino=2, dir=ROOT_INO, name="f"),
        *[Op("write", ino=2, off=i * 10, data=b"z" * 10) for i in range(9)],
    ]
    model = crash.model_at(ops, len(ops))
    assert crash.choice_for(model, "r77") == crash.choice_for(model, "r77")
    assert {crash.tree_digest(crash.materialise(model, crash.sample_choice(model, s))) for s in range(20)} != 1
    with pytest.raises(ValueError):
        crash.choice_for(model, "e999")


STRACE = """\
100  mkdir("/r/out.h5", 0755) = 0
100  openat(AT_FDCWD</r>, "/r/out.h5", O_RDONLY|O_DIRECTORY) = 3</r/out.h5>
100  openat(3</r/out.h5>, "0", O_RDWR|O_CREAT|O_TRUNC, 0644) = 4</r/out.h5/0>
101  write(2<pipe:[1]>, "h5fuzz: op 0: flush /", 21) = 21
 | 00000  68 35 66 75 7a 7a 3a 20  6f 70 20 30 3a 20 66 6c  h5fuzz: op 0: fl |
 | 00010  75 73 68 20 2f                                    ush /            |
100  pwrite64(4</r/out.h5/0>, "ab", 2, 8 <unfinished ...>
101  write(1<pipe:[2]>, "x", 1) = 1
 | 00000  78                                                x                |
100  <... pwrite64 resumed>) = 2
 | 00000  61 62                                             ab               |
100  fdatasync(4</r/out.h5/0>) = 0
100  renameat2(AT_FDCWD</r>, "/r/out.h5/0", AT_FDCWD</r>, "/r/x", RENAME_NOREPLACE) = 0
100  write(5</dev/shm/other>, "q", 1) = 1
100  unlinkat(3</r/out.h5>, "missing", 0) = -1 ENOENT (No such file or directory)
"""


def test_strace_output_becomes_an_operation_log(tmp_path):
    rec = crash.Recorder("/r")
    for sc in crash.parse_strace(STRACE.splitlines()):
        rec.feed(sc)
    kinds = [(op.kind, op.name or op.text, op.off, op.data) for op in rec.ops]
    assert kinds == [
        ("mkdir", "out.h5", 0, b""),
        ("create", "0", 0, b""),
        ("mark", "h5fuzz op 0", 0, b""),
        ("write", "", 8, b"ab"),
        ("fsync", "", 0, b""),
        ("rename", "0", 0, b""),
    ]
    assert rec.ops[-1].dir2 == ROOT_INO and rec.ops[-1].name2 == "x"


# -- on a stack -----------------------------------------------------------------------
def _stack_env():
    if shutil.which("strace") is None:
        pytest.skip("strace is missing (requirements/debian.txt)")
    if not Stacks().status(STACK)[0]:
        pytest.skip(f"stack {STACK} is not built")
    return crash.stack_environment(STACK)


@pytest.fixture(scope="module")
def env():
    return _stack_env()


def _known(fault):
    """A fault the regression file names as not yet fixed (a fixed one is a regression)."""
    return any(e.get("xfail") and re.search(e["match"], fault.message) for e in crash.regressions())


@pytest.mark.parametrize("spec", ["write:5:4:1", "merge:5:4:1", "write:6:4:2"])
def test_bounded_exploration_finds_only_known_faults(env, tmp_path, spec):
    """A sample of crash points of short workloads (2 ranks too): h5mf never dies or hangs,
    and every fault found is one the regression file names (not yet fixed)."""
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
    any fault (the fix changed the log, so the state has another number now)."""
    rec = crash.record(crash.Workload.parse(entry["workload"]), env, str(tmp_path))
    oracle = crash.Oracle(rec, env, str(tmp_path))
    if "fixed" not in entry:
        fault = crash.replay_state(rec, oracle, STACK, entry["point"], entry["state"])
        assert fault is None, fault.report()
        return
    tally = crash.Tally()
    crash.explore(rec, oracle, STACK, tally, most=10**6)
    assert tally.points == len(crash.crash_points(rec.ops)), "not every crash point was tried"
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
