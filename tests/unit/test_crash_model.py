# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The crash-state explorer's persistence model on hand-made operation logs and its strace
parser (lib/h5stack/verify/crash/; no stack needed). Its explorations on a stack are
tests/integration/test_crash.py."""

import pytest

from h5stack.verify import crash
from h5stack.verify.crash import ROOT_INO, Op


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


def test_workload_specs_are_checked_and_runs_take_every_kind():
    """A spec names its kind, seed, operations, ranks and grammar, each checked; a run of
    several ranks records the write with sync=on and off and in the head layout, the
    merge, the parallel merge and the merge in the head layout."""
    w = crash.Workload.parse("killed:3:8:2:5")
    assert (w.kind, w.seed, w.ops, w.ranks, w.grammar, w.writes()) == ("killed", 3, 8, 2, 5, True)
    for bad in ("pmerge:1:2:1:9", "write:1:0:1", "merge:1:2:0", "crash:1:2:1", "write:1:2"):
        with pytest.raises(ValueError, match="workload"):
            crash.Workload.parse(bad)
    kinds = [w.kind for w in crash.workloads(crash.Options(seeds=1, ranks=2))]
    assert kinds == ["write", "killed", "hwrite", "merge", "pmerge", "hmerge"]
    assert [w.kind for w in crash.workloads(crash.Options(seeds=1, merge=False))] == ["write", "killed", "hwrite"]
    head = crash.Workload.parse("hmerge:1:2:1")
    assert head.head() and not head.writes() and head.body() == "out.h5.h5mf"
