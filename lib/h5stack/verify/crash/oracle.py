# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The oracle: a crash state materialised in a scratch directory, judged by h5mf and
h5fuzz against the model of the operations before its last commit."""

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass

from h5stack.verify.crash.model import EVERYTHING, materialise, model_at, tree_digest, write_tree
from h5stack.verify.crash.recording import DUMP, HEAD_SLOT, commits

TIMEOUT = 60  # seconds for one h5mf or h5fuzz run on a crash state: longer is a hang


# -- the oracle ----------------------------------------------------------------------
@dataclass
class Run:
    rc: int  # the exit status; negative: killed by that signal; None: a hang
    text: str


def run_tool(cmd, env, cwd):
    try:
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, errors="replace")
    except subprocess.TimeoutExpired:
        return Run(None, f"no end after {TIMEOUT} s")
    return Run(proc.returncode, (proc.stdout + proc.stderr).strip())


def tool_fault(cmd, run):
    """A run that died by a signal or hung: a fault whatever the state."""
    if run.rc is None:
        return f"hang: {' '.join(cmd)}: {run.text}"
    if run.rc < 0:
        return f"signal {-run.rc}: {' '.join(cmd)}: {run.text[-500:]}"
    return None


def metafile_facts(tree, body="out.h5"):
    """(committed, complete) of the crash state's metafile (in the directory body), or
    None when it has none or an unreadable one."""
    text = tree.get(f"{body}/metafile")
    if not isinstance(text, bytes):
        return None
    text = text.decode("latin-1")
    committed, state = re.search(r"^committed (\d+)$", text, re.M), re.search(r"^state (\w+)$", text, re.M)
    if not committed or not state:
        return None
    return int(committed.group(1)), state.group(1) == "complete"


class Oracle:
    """Judges crash states of one recorded workload; verdicts of identical states (the
    same tree) and model checks of identical files are cached."""

    def __init__(self, recording, env, work):
        self.w = recording.workload
        self.env = {k: v for k, v in env.items() if k not in ("HDF5_DRIVER", "HDF5_DRIVER_CONFIG")}
        self.work = work
        self.golden, self.durable = commits(recording.ops, recording.initial)
        if self.w.kind == "dump":  # every dump as the servers wrote it
            ops = recording.ops
            self.dumps = materialise(model_at(ops, len(ops), recording.initial), EVERYTHING)
        self._verdicts, self._models = {}, {}
        self.judged = 0

    def judge(self, tree, point):
        """None, or the fault of the crash state `tree` at crash point `point`."""
        key = (tree_digest(tree), self.durable[point - 1] if self.w.writes() else 0)
        if key not in self._verdicts:
            self.judged += 1
            where = os.path.join(self.work, "state")
            write_tree(tree, where)
            if self.w.kind == "dump":
                judge = self._judge_dump
            else:
                judge = self._judge_write if self.w.writes() else self._judge_merge
            self._verdicts[key] = judge(tree, os.path.join(where, "out.h5"), key[1])
        return self._verdicts[key]

    def _h5mf(self, *args):
        cmd = ["h5mf", *args]
        run = run_tool(cmd, self.env, self.work)
        return run, tool_fault(cmd, run)

    def _inspect(self, d, complete):
        """info and verify (--partial for a directory whose writer did not close it) of a
        directory: (verify's run, a fault or None)."""
        info, fault = self._h5mf("info", d)
        if fault:
            return info, fault
        return self._h5mf("verify", d, *([] if complete else ["--partial"]))

    def _judge_write(self, tree, d, claimed):
        facts = metafile_facts(tree, self.w.body())
        verify, fault = self._inspect(d, facts is not None and facts[1])
        if fault:
            return fault
        if facts is None:
            body = self.w.body()
            gone = f"no directory {body}" if body not in tree else f"no readable metafile in {body}"
            return f"lost: {claimed} epoch(s) were committed durably, the state has {gone}" if claimed else None
        committed, complete = facts
        if committed == 0:  # nothing to reconstruct: any verdict but a crash or a hang
            return None
        if verify.rc != 0:
            return f"damaged: h5mf verify: {verify.text[-500:]}"
        if committed < claimed:
            return f"lost: {claimed} epochs were committed durably, the metafile says {committed}"
        return self._check_merge(d, committed, complete)

    def _check_merge(self, d, committed, complete):
        out = os.path.join(self.work, "merged.h5")
        if os.path.exists(out):
            os.unlink(out)
        run, fault = self._h5mf("merge", "-q", *([] if complete else ["--partial"]), d, "-o", out)
        if fault or run.rc != 0:
            return fault or f"merge: {'h5mf merge' if complete else 'h5mf merge --partial'} fails: {run.text[-500:]}"
        ops = self.golden.get(committed)
        if ops is None:
            return f"differs: the metafile says {committed} epochs, no commit of the session said so"
        return self._model_check(out, ops)

    def _model_check(self, path, ops):
        with open(path, "rb") as f:
            key = (hashlib.sha256(f.read()).hexdigest(), ops)
        if key not in self._models:
            cmd = ["h5fuzz", path, *self.w.fuzz_args(ops), "--verify-only", "--writer-ranks", str(self.w.ranks)]
            cmd += ["--driver", "sec2"]
            run = run_tool(cmd, self.env, self.work)
            bad = tool_fault(cmd, run) or (run.rc != 0 and f"{run.text[-800:]}")
            self._models[key] = f"differs: not the file of the first {ops} operations: {bad}" if bad else None
        return self._models[key]

    def _judge_merge(self, tree, d, _claimed):
        """An interrupted merge leaves the intact old directory or the complete new file,
        and merging the same path again gives the whole file with nothing left beside it."""
        what = tree.get("out.h5", "missing")
        if what == "missing":
            return "neither: out.h5 is gone (neither the old directory nor the new file)"
        if isinstance(what, bytes) and not (self.w.head() and what[HEAD_SLOT : HEAD_SLOT + 8] == b"H5MFHEAD"):
            bad = self._model_check(d, self.w.ops)
            if bad:
                return f"neither: the new file is not whole: {bad}"
            return self._merge_again(d)
        verify, fault = self._inspect(d, True)
        facts = metafile_facts(tree, self.w.body())
        if fault:
            return fault
        if verify.rc != 0 or facts is None or not facts[1]:
            what = "the head of a directory" if self.w.head() else "a directory"
            return f"neither: out.h5 is {what} that is not the intact old one: {verify.text[-500:]}"
        return self._merge_again(d)

    def _judge_dump(self, tree, _d, _claimed):
        """A dump of the DSM's server under its final name is the whole dump (it is written
        to a temporary name, synced, renamed and its directory synced), or absent."""
        for path, content in sorted(tree.items()):
            whole = self.dumps.get(path)
            if DUMP.fullmatch(path) and content != whole:
                size = "no such dump at the end" if whole is None else f"{len(content)} of {len(whole)} bytes"
                return f"torn: {path} under its final name is not the whole dump ({size})"
        return None

    def _merge_again(self, d):
        """What a user does after the crash: `h5mf merge out.h5` once more. It must exit 0
        with the whole file at out.h5 and remove what the interrupted merge left beside it
        (its partial output, the old directory swapped out, or that directory emptied)."""
        run, fault = self._h5mf("merge", "-q", d)
        if fault or run.rc != 0:
            return fault or f"again: h5mf merge of the crash state fails: {run.text[-500:]}"
        left = sorted(set(os.listdir(os.path.dirname(d))) - {"out.h5"})
        if left:
            return f"again: h5mf merge left {', '.join(left)} beside the file"
        if not os.path.isfile(d):
            return "again: h5mf merge exited 0 but out.h5 is not a file"
        bad = self._model_check(d, self.w.ops)
        return bad and f"again: {bad}"
