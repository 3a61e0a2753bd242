# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Exploring a recording's crash points and states, the faults found and their tally,
the regression cases, and `./h5stack crash` itself."""

import os
import random
import re
import shutil
import time
from dataclasses import dataclass, field

import yaml

from h5stack.base import paths
from h5stack.base.ui import StepError
from h5stack.verify.crash.model import (
    EVERYTHING,
    Model,
    choice_for,
    crash_points,
    enumerate_choices,
    materialise,
    model_at,
    sample_choice,
)
from h5stack.verify.crash.oracle import Oracle
from h5stack.verify.crash.recording import Workload, record

EXHAUSTIVE_POINTS = 400  # logs with more crash points are sampled
REGRESSIONS = os.path.join(paths.ROOT, "tests", "data", "crash_regressions.yaml")


# -- exploring -----------------------------------------------------------------------
@dataclass
class Fault:
    stack: str
    workload: Workload
    point: int
    state: str
    message: str
    choice: str
    op: str

    def kind(self):
        return self.message.split(":", 1)[0]

    def signature(self):
        return (self.workload.kind, re.sub(r"\d+", "N", self.message.splitlines()[0])[:160])

    def replay(self):
        return f"./h5stack crash --stack {self.stack} --workload {self.workload.spec()} --point {self.point} --state {self.state}"

    def report(self):
        return "\n".join(
            [
                f"FAULT ({self.kind()}): {self.workload.spec()} crash point {self.point} (after: {self.op}), "
                f"state {self.state} ({self.choice})",
                self.message.rstrip(),
                f"replay: {self.replay()}",
            ]
        )


@dataclass
class Tally:
    workloads: int = 0
    points: int = 0
    states: int = 0
    judged: int = 0
    faults: dict = field(default_factory=dict)  # signature -> [first Fault, count]

    def add(self, fault):
        """Count the fault; True when it is of a new kind (to be printed)."""
        entry = self.faults.setdefault(fault.signature(), [fault, 0])
        entry[1] += 1
        return entry[1] == 1

    def summary(self, seconds):
        n = sum(c for _, c in self.faults.values())
        return (
            f"crash: {self.workloads} workload(s), {self.points} crash point(s), {self.states} state(s) tried "
            f"({self.judged} distinct judged), {n} faulty state(s) of {len(self.faults)} kind(s) in {seconds:.0f} s"
        )


def states_at(model, point, seed, exhaustive, samples, killed=False):
    """(state name, Choice) to try at a crash point; killed: only e0, every pending change
    persisted (what a killed process leaves)."""
    if killed:
        return [("e0", EVERYTHING)]
    if exhaustive:
        return [(f"e{i}", c) for i, c in enumerate(enumerate_choices(model))]
    rng = random.Random(f"{seed}:{point}")
    names = [f"r{rng.randrange(1 << 30)}" for _ in range(samples)]
    return [(n, sample_choice(model, int(n[1:]))) for n in names]


def explore(
    recording, oracle, stack, tally, deadline=None, seed=0, samples=4, on_fault=None, most=EXHAUSTIVE_POINTS, only=None
):
    """Every crash point of the log (or those of `only`) and its enumerated states when
    they are at most `most`; else a seeded sample of `most` points and `samples` random
    states at each. Each state judged; faults into the tally."""
    ops = recording.ops
    points = crash_points(ops) if only is None else sorted(only)
    exhaustive = len(points) <= most
    if not exhaustive:
        points = sorted(random.Random(seed).sample(points, most))
    model, done = Model(recording.initial), 0
    killed = recording.workload.kind == "killed"
    tally.workloads += 1
    for point in points:
        while done < point:
            model.apply(ops[done])
            done += 1
        if deadline and time.monotonic() > deadline:
            break
        tally.points += 1
        for name, choice in states_at(model, point, seed, exhaustive, samples, killed):
            tally.states += 1
            message = oracle.judge(materialise(model, choice), point)
            if message:
                fault = Fault(stack, recording.workload, point, name, message, choice.label, ops[point - 1].describe())
                if tally.add(fault) and on_fault:
                    on_fault(fault)
    tally.judged += oracle.judged


def replay_state(recording, oracle, stack, point, state):
    """One crash state, materialised in the oracle's work directory: its Fault or None."""
    points = crash_points(recording.ops)
    if point not in points:
        raise ValueError(f"point {point}: {recording.workload.spec()} has crash points {points[0]}..{points[-1]}")
    model = model_at(recording.ops, point, recording.initial)
    choice = choice_for(model, state)
    message = oracle.judge(materialise(model, choice), point)
    op = recording.ops[point - 1].describe()
    return Fault(stack, recording.workload, point, state, message, choice.label, op) if message else None


def regressions(path=REGRESSIONS):
    """The crash states kept as regression cases (tests/data/crash_regressions.yaml)."""
    with open(path) as f:
        entries = yaml.safe_load(f) or []
    for e in entries:
        if not {"workload", "point", "state", "fault"} <= set(e):
            raise ValueError(f"{path}: an entry needs workload, point, state and fault: {e}")
    return entries


@dataclass(frozen=True)
class Options:
    """What `./h5stack crash` was asked (typed; built from the command line by commands/crash.py)."""

    stack: str = "mpich-hdf5-1.14"
    seeds: int = 2
    seconds: float = 0.0  # 0: no time limit
    ops: int = 8
    ranks: int = 1
    first_seed: int = 1
    merge: bool = True
    workload: str = ""  # one workload (a replay), KIND:SEED:OPS:RANKS
    point: int = 0  # with workload and state: one crash state
    state: str = ""
    workroot: str = ""
    points: int = EXHAUSTIVE_POINTS  # crash points per workload: a log with more is sampled


def workloads(opts):
    """The workloads of a run: each seed written with sync=on, with sync=off (killed) and
    in the head layout, and (with merge) merged, by as many processes as ranks wrote it
    too when they are more than one, and merged in the head layout."""
    if opts.workload:
        return [Workload.parse(opts.workload)]
    merges = ("merge", *(("pmerge",) if opts.ranks > 1 else ()), "hmerge") if opts.merge else ()
    kinds = ("write", "killed", "hwrite", *merges)
    return [
        Workload(k, s, opts.ops, opts.ranks)
        for s in range(opts.first_seed, opts.first_seed + opts.seeds)
        for k in kinds
    ]


def stack_environment(stack):
    from h5stack.stacks.plan import Stacks
    from h5stack.stacks.stackdir import process_env

    return process_env(Stacks().built(stack))


def run(opts, say=print):
    """./h5stack crash: record, enumerate, judge; a summary. 1 when a fault was found."""
    if shutil.which("strace") is None:
        raise StepError("strace is missing (Debian: strace, in requirements/debian.txt)")
    env = stack_environment(opts.stack)
    workroot = opts.workroot or os.path.join(paths.home(), "crash")
    t0, tally = time.monotonic(), Tally()
    deadline = t0 + opts.seconds if opts.seconds else None
    for w in workloads(opts):
        if deadline and time.monotonic() > deadline:
            break
        work = os.path.join(workroot, w.spec().replace(":", "-"))
        os.makedirs(work, exist_ok=True)
        rec = record(w, env, work)
        oracle = Oracle(rec, env, work)
        if opts.point:
            fault = replay_state(rec, oracle, opts.stack, opts.point, opts.state)
            say(fault.report() if fault else f"crash: {w.spec()} point {opts.point} state {opts.state}: ok")
            say(f"crash: the state is in {os.path.join(work, 'state')}")
            return 1 if fault else 0
        say(f"crash: {w.spec()}: {len(crash_points(rec.ops))} crash points recorded in {rec.seconds:.1f} s")
        explore(
            rec, oracle, opts.stack, tally, deadline, seed=w.seed, on_fault=lambda f: say(f.report()), most=opts.points
        )
    say(tally.summary(time.monotonic() - t0))
    return 1 if tally.faults else 0
