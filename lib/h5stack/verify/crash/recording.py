# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The workloads recorded under strace: h5fuzz write sessions (sync on, killed, the head
layout), h5mf merges (serial, parallel, in the head layout) and the DSM server's dumps."""

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass

from h5stack.base.ui import StepError
from h5stack.verify.crash.model import Model, read_tree
from h5stack.verify.crash.strace import record_strace

TRACED = (
    "open,openat,creat,write,pwrite64,writev,pwritev,pwritev2,ftruncate,truncate,fsync,fdatasync,"
    "rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,rmdir,copy_file_range,ioctl,close,"
    "dup,dup2,dup3,fcntl,clone,clone3,fork,vfork"
)


# -- workloads ---------------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    """An h5fuzz workload (seed, operations, ranks) written through the multifile plugin
    with sync=on ("write": the session is recorded), or with the default sync=off
    ("killed": judged only in the state a killed process leaves, every change it made
    persisted, which is all sync=off promises), or reconstructed in place afterwards
    ("merge": `h5mf merge` is recorded; "pmerge": the parallel merge, `mpiexec -n RANKS
    h5mf merge`, is recorded, every process); or written by RANKS clients into the DSM of
    two servers whose action dumps each closed file ("dump": the servers are recorded).
    "hwrite" and "hmerge" are "write" and "merge" in the head layout (the driver's default,
    layout=head: out.h5 a small HDF5 file naming its directory out.h5.h5mf); the others
    write the directory layout (layout=dir: out.h5 is the directory)."""

    def writes(self):
        """A write session is recorded (not a merge)."""
        return self.kind in ("write", "killed", "hwrite")

    def head(self):
        """Written in the head layout."""
        return self.kind in ("hwrite", "hmerge")

    def body(self):
        """The multifile directory, relative to the scratch root."""
        return "out.h5.h5mf" if self.head() else "out.h5"

    kind: str
    seed: int
    ops: int
    ranks: int = 1
    grammar: int = 1

    @classmethod
    def parse(cls, spec):
        """KIND:SEED:OPS:RANKS[:GRAMMAR], e.g. write:3:10:1; the reason when it is not one."""
        parts = spec.split(":")
        if len(parts) not in (4, 5) or parts[0] not in KINDS or not all(p.isdigit() for p in parts[1:]):
            raise ValueError(f"workload {spec!r}: expected {'|'.join(KINDS)}:SEED:OPS:RANKS[:GRAMMAR]")
        w = cls(parts[0], *(int(p) for p in parts[1:]))
        if w.ops < 1 or w.ranks < 1 or not 1 <= w.grammar <= GRAMMARS:
            raise ValueError(f"workload {spec!r}: OPS and RANKS are at least 1, GRAMMAR is 1 to {GRAMMARS}")
        return w

    def spec(self):
        return f"{self.kind}:{self.seed}:{self.ops}:{self.ranks}" + (f":{self.grammar}" if self.grammar != 1 else "")

    def fuzz_args(self, ops=None):
        return [
            "--seed",
            str(self.seed),
            "--ops",
            str(self.ops if ops is None else ops),
            "--grammar",
            str(self.grammar),
        ]


KINDS = ("write", "killed", "merge", "pmerge", "dump", "hwrite", "hmerge")
DUMP = re.compile(r"dump_\d+\.h5")  # the final names of the DSM servers' dumps
HEAD_SLOT = 2048  # where a head holds its slot, which begins with "H5MFHEAD" (src/mf_head.h)
GRAMMARS = 6  # h5fuzz's grammars (./h5stack fuzz --grammar)


@dataclass
class Recording:
    workload: Workload
    ops: list
    initial: dict  # the durable tree the log starts from
    seconds: float = 0.0


def strace_command(trace):
    return ["strace", "-f", "-qq", "-y", "-s", "80", "-e", f"trace={TRACED}", "-e", "write=all", "-o", trace]


def run_checked(cmd, env, cwd, what):
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise StepError(
            f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{(proc.stdout + proc.stderr)[-2000:]}"
        )
    return proc


def writer_env(env, sync=True, head=False):
    config = ("sync=on" if sync else "sync=off") + (";layout=head" if head else ";layout=dir")
    return dict(env, HDF5_DRIVER="multifile", HDF5_DRIVER_CONFIG=config)


def record(workload, env, work):
    """Run the workload under strace in work/root; its operation log."""
    t0 = time.monotonic()
    root = os.path.join(work, "root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    root = os.path.realpath(root)
    trace, target = os.path.join(work, "strace.txt"), os.path.join(root, "out.h5")
    write = ["mpiexec", "-n", str(workload.ranks), "h5fuzz", target, *workload.fuzz_args(), "--driver", "default"]
    write += ["--no-verify", "--verbose"]
    initial = {}
    if workload.kind == "dump":
        server = [
            "h5dsm-server",
            "--size",
            "16m",
            "--distribution",
            "linear",
            "--action",
            f"dump:{root}/dump_{{step}}.h5",
        ]
        client = ["h5fuzz", "mem.h5", *workload.fuzz_args(), "--driver", "dsm", "--no-verify"]
        client += ["--all-ranks"] if workload.grammar >= 5 else []  # the DSM's clients open files together
        cmd = ["mpiexec", "-n", "2", *server, ":", "-n", str(workload.ranks), *client]
        run_checked(strace_command(trace) + cmd, env, work, "the traced DSM session")
    elif workload.writes():
        wenv = writer_env(env, sync=workload.kind != "killed", head=workload.head())
        run_checked(strace_command(trace) + write, wenv, work, "the traced write session")
    else:
        run_checked(write, writer_env(env, head=workload.head()), work, "the write session")
        initial = read_tree(root)
        merge = ["h5mf", "merge", "-q", target]
        if workload.kind == "pmerge":
            merge = ["mpiexec", "-n", str(workload.ranks), *merge]
        run_checked(strace_command(trace) + merge, env, work, "the traced merge")
    ops = record_strace(trace, root, initial)
    return Recording(workload, ops, initial, time.monotonic() - t0)


def commits(ops, initial=None):
    """{committed epochs C: operations K}: the metafile saying C was renamed into place
    after h5fuzz announced operation K-1 (so the model of the first K operations is the
    golden file of C; each commit is made by a flush, a close or a reopen, which change
    no data); and for each crash point the C the writer had made durable (the rename,
    then an fsync of the directory)."""
    golden, durable, model, last_mark, pending, claimed = {}, [], Model(initial), -1, {}, 0
    for op in ops:
        if op.kind == "mark":
            last_mark = int(op.text.split()[-1])
        elif op.kind == "rename" and op.name2 == "metafile":
            text = model.files[model.dirs[op.dir].live[op.name]].live.decode("latin-1")
            m = re.search(r"^committed (\d+)$", text, re.M)
            if m:
                golden[int(m.group(1))] = last_mark + 1
                pending[op.dir2] = int(m.group(1))
        elif op.kind == "fsync" and op.ino in pending:
            claimed = max(claimed, pending.pop(op.ino))
        model.apply(op)
        durable.append(claimed)
    return golden, durable
