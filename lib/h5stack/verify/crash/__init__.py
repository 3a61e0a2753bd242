# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`h5stack crash`: the multifile commit protocol against power loss (after ALICE and
ParaCrash).

1. Record: a workload's file-system operations, taken from `strace -f -y -e write=all`
   (every rank of a multifile write session, or `h5mf merge`), become an operation log
   (Op): creates, writes with their bytes, truncates, fsyncs, renames, unlinks, mkdirs,
   copies, in the order the kernel saw them. strace and not an LD_PRELOAD shim: it sees
   the kernel boundary, where persistence is decided (calls libc makes internally and
   the MPI library's own included), and needs nothing built per stack.
2. Enumerate: after each operation (a crash point) a bounded set of crash states under
   the persistence model (packages/hdf5-vfd-multifile/README.md): the data of a file up
   to its last fsync persists, later writes may be lost, torn at 4 KiB or persist out of
   order; a create, rename or unlink persists once its directory is fsynced. Exhaustive
   for short logs, seeded samples for long ones; a state is named by its crash point and
   "e<N>" (the N-th enumerated) or "r<N>" (random, seed N) and is replayed from them.
3. Materialise each state in a scratch directory and judge it (Oracle): `h5mf info` and
   `verify` give a verdict and never die by a signal or hang; `h5mf merge --partial`
   gives the file of the last committed epoch, which h5fuzz checks against the model of
   the operations before that commit; no epoch the writer had made durable is lost; an
   interrupted merge leaves the intact directory or the whole new file, and merging the
   same path again gives the whole file with nothing left beside it.

The modules, each using only those above it: model (the operation log, the file system
it describes, the crash states), strace (a recording's strace output as an operation
log), recording (what is recorded, and how), oracle (a crash state judged), exploring (the
crash points and states of a recording, the faults, the regression cases, the command).
"""

from h5stack.verify.crash.exploring import (
    Fault,
    Options,
    Tally,
    explore,
    regressions,
    replay_state,
    run,
    stack_environment,
    workloads,
)
from h5stack.verify.crash.model import (
    EVERYTHING,
    ROOT_INO,
    Choice,
    Model,
    Op,
    choice_for,
    crash_points,
    enumerate_choices,
    materialise,
    model_at,
    sample_choice,
    tree_digest,
)
from h5stack.verify.crash.oracle import Oracle
from h5stack.verify.crash.recording import Workload, commits, record
from h5stack.verify.crash.strace import Recorder, parse_strace

__all__ = [
    "EVERYTHING", "ROOT_INO", "Choice", "Fault", "Model", "Op", "Options", "Oracle", "Recorder", "Tally", "Workload",
    "choice_for", "commits", "crash_points", "enumerate_choices", "explore", "materialise", "model_at",
    "parse_strace", "record", "regressions", "replay_state", "run", "sample_choice", "stack_environment",
    "tree_digest", "workloads",
]  # fmt: skip
