# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`h5stack fuzz`: the drivers against HDF5's MPI-IO driver, on random workloads.

A case is one workload (packages/h5fuzz: a seed, a number of ranks and operations, or
the fixed case `straddle`) on one stack through one driver variant. Every run is judged
against the workload's model first, the MPI-IO reference included:
  1. the reference: the workload written with MPI-IO and checked value by value against
     the model. A file that differs from it is an MPI-IO fault: reported as such, never
     used as the truth (the variant is then judged against the model alone); an HDF5
     error or a crash there means HDF5 cannot run the workload with MPI-IO: reported
     once, and the variants are still run and judged against the model alone (a
     variant that fails too is "not judged": it may meet the same fault of HDF5). A
     variant that fails in an HDF5 call where the reference ran makes the reference run
     again, slowed at other points, up to REFERENCE_TRIES times: when one of those runs
     fails in the same operation, HDF5 fails the workload now and then, and the variant
     is not judged either;
  2. the same workload through the variant, with slowed ranks (libh5fuzz_delay.so) and,
     for multifile, ranks whose clocks differ by seconds and drift by 100 ppm
     (h5fuzz-clock: a time namespace and libfaketime per rank); every value read back
     during the session is checked against the model;
  3. multifile: `h5mf verify`, then read in place by another number of ranks (checked
     value by value), then reconstructed (`h5mf merge -o` by that number of processes,
     the index resolved in windows of a few records); DSM: dumped by the server;
  4. the result checked value by value against the model (serially, as an ordinary
     file), then `h5diff` of the reference and the result (silent, exit 0) over what the
     model defines: datasets with elements that no write and no fill value defined are
     left out (their bytes are undefined: MPI-IO may leave garbage there).
MPI programs start through a Launcher (lib/h5stack/machine/launch.py): mpiexec on this node, or
srun over the nodes of the Slurm allocation the fuzzer runs in.
A failing case is minimised (the fewest operations that still fail: a shorter workload
of a seed is a prefix of the longer one) and printed with the command that replays it.
"""

import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field, replace
from typing import Optional

import yaml

from h5stack.base import paths, results
from h5stack.base.ui import StepError, fmt_seconds, info
from h5stack.machine.launch import Launcher
from h5stack.stacks.plan import Stacks
from h5stack.stacks.stackdir import process_env
from h5stack.verify import known

#: variables shown with each step of a failing case (they choose the driver and its paths)
STEP_ENV = ("HDF5_DRIVER", "HDF5_DRIVER_CONFIG", "H5MF_TEST_WINDOW_RECORDS")

# distributions of the DSM's address space among its servers (h5dsm-server --distribution)
DSM_DISTRIBUTIONS = ("linear", "block-cyclic:64k", "random-block:4k:7", "mask:16m")
DELAY = "1500:20"  # libh5fuzz_delay.so: up to 1.5 ms before 20 % of the I/O calls
CLOCK = "5:100"  # h5fuzz-clock: offsets of up to 5 s, rates of 1 +- 100 ppm
TIMEOUT = 300  # seconds for one program run: a hang is a failure
DIFFERS = 4  # h5fuzz's exit status when the file (or a read during the session) differs from the model
BAD_ARGUMENTS = 2  # h5fuzz's exit status for arguments it does not take (an h5fuzz older than the harness)
OP_FAILED = re.compile(r"h5fuzz: rank \d+: operation (\d+) failed: (\S+)")  # an HDF5 call failed
REFERENCE_TRIES = 10  # runs of the MPI-IO reference that look for an HDF5 call failing now and then
REGRESSIONS = os.path.join(paths.PACKAGES_DIR, "h5fuzz", "regressions.yaml")


@dataclass(frozen=True)
class Case:
    stack: str
    variant: str  # multifile, multifile-linked, mpiposix, dsm:<distribution>
    seed: int  # 0 with case="straddle"
    ranks: int
    ops: int = 60
    case: str = ""
    perturb: bool = True
    grammar: int = 1  # h5fuzz --grammar: the same seed is another workload in another grammar
    plan: str = ""  # a regression seed's recorded plan digest (h5fuzz --plan); "": not checked

    @property
    def all_ranks(self):
        """The DSM's clients open a file together: from grammar 5 on it runs the workload
        without its sessions of fewer ranks (h5fuzz --all-ranks), and so does its reference."""
        return self.variant.startswith("dsm:") and not self.case and self.grammar >= SESSIONS_GRAMMAR

    def label(self):
        what = f"case {self.case}" if self.case else f"seed {self.seed}"
        return f"{self.stack} {self.variant} {what} ({self.ranks} ranks, {self.ops} operations)"

    def replay(self):
        what = f"--case {self.case}" if self.case else f"--seed {self.seed} --ops {self.ops} --grammar {self.grammar}"
        quiet = "" if self.perturb else " --no-perturb"
        return f"./h5stack fuzz --stack {self.stack} --driver {self.variant} {what} --ranks {self.ranks}{quiet}"


@dataclass
class Outcome:
    case: Case
    ok: bool  # the variant's verdict (against the model, and against MPI-IO where MPI-IO is right)
    message: str = ""
    seconds: float = 0.0
    workdir: str = ""
    steps: list = field(default_factory=list)
    mpiio_fault: str = ""  # the MPI-IO reference differs from the model (not the variant's fault)
    reference: str = ""  # the command that wrote the reference
    #: HDF5 with MPI-IO cannot run the workload (exit, hang): the variant is not judged
    reference_failed: str = ""
    compared: bool = False  # h5diff compared the result with the reference, and found them equal


@dataclass(frozen=True)
class Reference:
    """The workload written with MPI-IO and judged against its model."""

    path: str
    command: str
    #: (dataset, elements the model leaves undefined, of them not zero in this file): left
    #: out of the comparison of whole files
    undefined: tuple = ()
    fault: str = ""  # how the file differs from the model: an MPI-IO fault
    failed: str = ""  # why HDF5 with MPI-IO could not run the workload (no file to judge by)


def window_records(seed, records):
    """The records of an address window of the fuzzer's merges: a few by seed (2 to 17),
    and never more than 64 windows."""
    return max(2 + seed % 16, -(-records // 64))


def undefined_datasets(text):
    """The datasets h5fuzz reports with elements the model leaves undefined (never written,
    no fill value written): (path, elements, elements not zero in the file checked)."""
    found = re.findall(r"^h5fuzz: undefined: (\S+): (\d+) elements .*?, (\d+) of them not zero", text, re.M)
    return tuple((path, int(n), int(odd)) for path, n, odd in found)


#: the variants by what a stack must hold to offer them (variants()), and all of them
MULTIFILE_VARIANTS = ("multifile", "multifile-linked")  # the hdf5-vfd-multifile package
DSM_VARIANTS = tuple(f"dsm:{d}" for d in DSM_DISTRIBUTIONS)  # the hdf5-vfd-dsm package
ALL_VARIANTS = ("mpiposix", *MULTIFILE_VARIANTS, *DSM_VARIANTS)  # mpiposix: a patched twin's libhdf5


def variants(desc):
    """The driver variants a stack offers (from its stack.json)."""
    names = {p["name"] for p in desc.get("packages", [])}
    if "h5fuzz" not in names:
        return []
    twin = desc.get("variant") == "multifile" or desc["name"].endswith("-multifile")
    return [
        *(["mpiposix"] if twin else []),  # the patched libhdf5's own driver, the original API
        *(MULTIFILE_VARIANTS if "hdf5-vfd-multifile" in names else ()),
        *(DSM_VARIANTS if "hdf5-vfd-dsm" in names else ()),
    ]


#: the first grammar whose workloads open the file by fewer ranks than the job has: the
#: DSM's clients open a file all together (its servers count them), so it runs them
#: without those sessions (Case.all_ranks)
SESSIONS_GRAMMAR = 5


def applies(variant, grammar=1, case=""):
    """Whether a variant can run a workload: the metadata case tests multifile's stamps
    (the DSM has none)."""
    return not (variant.startswith("dsm:") and case == "metadata")


def check_drivers(drivers):
    """Refuse a --driver that no stack can offer, before anything is set up."""
    known = set(ALL_VARIANTS) | {v.split(":")[0] for v in ALL_VARIANTS}
    for d in drivers:
        if d not in known:
            raise StepError(
                f"--driver {d}: unknown; the variants are {', '.join(ALL_VARIANTS)} (dsm: every distribution)"
            )


def bounded(cmd, cwd, env):
    """cmd run to its end (a CompletedProcess, text output), or None after TIMEOUT s: then
    every process of its session is killed, the launcher's ranks too (Open MPI puts each
    rank in a process group of its own, and a killed mpiexec left them waiting for ever)."""
    with subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as proc:
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            kill_session(proc.pid)
            try:  # a process that left the session may still hold the pipes: not for long
                proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            return None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def kill_session(sid):
    """SIGKILL to every process of session sid (/proc/PID/stat's sixth field)."""
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:
                os.kill(int(entry), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue  # not a process, or gone


class Runner:
    """Runs cases; references are shared by the cases of one stack and workload."""

    def __init__(self, workroot=None, keep=False, launcher=None):
        self.stacks = Stacks()
        self.launcher = launcher or Launcher()
        self.workroot = workroot or os.path.join(paths.home(), "fuzz")
        self.keep = keep
        self._refs = {}
        os.makedirs(self.workroot, exist_ok=True)

    def desc(self, stack):
        return self.stacks.built(stack)

    # -- running programs ------------------------------------------------------
    def _run(self, out, env, cmd, cwd, expect_ok=True):
        shown = [f"{k}={env[k]}" for k in STEP_ENV if k in env]  # what selects a path, in the printed steps
        out.steps.append(" ".join(shown + cmd))
        proc = bounded(cmd, cwd, env)
        if proc is None:
            raise CaseFailed(f"no end after {TIMEOUT} s (a hang): {' '.join(cmd)}")
        text = proc.stdout + proc.stderr
        if expect_ok and proc.returncode != 0:
            raise CaseFailed(f"exit {proc.returncode}: {' '.join(cmd)}\n{text[-3000:]}")
        return proc, text

    def _fuzz_args(self, case):
        if case.case:
            return ["--case", case.case]
        every = ["--all-ranks"] if case.all_ranks else []
        return ["--seed", str(case.seed), "--ops", str(case.ops), "--grammar", str(case.grammar), *every]

    def reference_command(self, case, path):
        """The MPI program that writes the reference and checks it against the model."""
        return self.launcher.command(case.ranks, ["h5fuzz", path, *self._fuzz_args(case)])

    def reference(self, case, env, out):
        """The MPI-IO file of the workload, judged against the model (made once per stack
        and workload)."""
        key = (case.stack, case.seed, case.ranks, case.ops, case.case, case.grammar, case.all_ranks)
        if key in self._refs and (self._refs[key].failed or os.path.exists(self._refs[key].path)):
            return self._refs[key]
        name = f"{case.case or case.seed}-{case.ranks}r-{case.ops}o-g{case.grammar}{'-all' if case.all_ranks else ''}"
        d = os.path.join(self.workroot, case.stack, "reference", name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        ref = os.path.join(d, "ref.h5")
        cmd = self.reference_command(case, ref)
        try:
            proc, text = self._run(out, env, cmd, d, expect_ok=False)
        except CaseFailed as e:  # a hang
            self._refs[key] = Reference(ref, " ".join(cmd), failed=str(e))
            return self._refs[key]
        if proc.returncode == BAD_ARGUMENTS:  # not HDF5 failing the workload: the run cannot go on
            raise StepError(
                f"{case.stack}: h5fuzz refused its arguments or could not set up MPI-IO (exit 2), so no "
                f"case of this run can be judged; an h5fuzz older than this harness is mended by "
                f"./h5stack setup {case.stack}:\n{' '.join(cmd)}\n{text[-1500:]}"
            )
        fault, failed = "", ""
        if proc.returncode == DIFFERS:
            fault = f"the MPI-IO file differs from the workload's model (not used as the reference):\n{text[-3000:]}"
        elif proc.returncode != 0:
            failed = f"exit {proc.returncode} (HDF5 with MPI-IO cannot run the workload):\n{text[-3000:]}"
        self._refs[key] = Reference(ref, " ".join(cmd), undefined_datasets(text), fault, failed)
        return self._refs[key]

    def _perturbed(self, case, env, clocks):
        env = dict(env)
        if case.perturb:
            lib = shutil.which("h5fuzz", path=env["PATH"])
            env["LD_PRELOAD"] = os.path.join(os.path.dirname(os.path.dirname(lib)), "lib", "libh5fuzz_delay.so")
            env["H5FUZZ_DELAY"] = f"{DELAY}:{case.seed}"
            if clocks:
                env["H5FUZZ_CLOCK"] = f"{CLOCK}:{case.seed}"
        return env

    def _multifile(self, case, env, work, out):
        d = os.path.join(work, "out.h5")
        wenv = self._perturbed(case, env, clocks=True)
        driver = {"multifile": "default", "multifile-linked": "multifile", "mpiposix": "mpiposix"}[case.variant]
        head = case.seed % 2 == 1  # the path a head beside its directory (the default), else the directory
        layout = f"layout={'head' if head else 'dir'}"
        config = []  # the plugin takes it from HDF5_DRIVER_CONFIG, linked and mpiposix from --config
        if case.variant == "multifile":
            wenv["HDF5_DRIVER"], wenv["HDF5_DRIVER_CONFIG"] = "multifile", layout
        else:
            config = ["--config", layout]
        clock = ["h5fuzz-clock"] if case.perturb else []
        argv = [*clock, "h5fuzz", d, *self._fuzz_args(case), "--driver", driver, *config, "--no-verify"]
        self._run(out, wenv, self.launcher.command(case.ranks, argv), work)
        laid_out = os.path.isfile(d) and os.path.isdir(d + ".h5mf") if head else os.path.isdir(d)
        if not laid_out:
            raise CaseFailed(f"{d}: not the layout asked for ({layout})")
        self._run(out, env, ["h5mf", "verify", d], work)
        other = case.ranks % 3 + 1  # read in place by another number of ranks
        renv = dict(env, HDF5_DRIVER="multifile", HDF5_DRIVER_CONFIG="read=inplace")
        argv = ["h5fuzz", d, *self._fuzz_args(case), "--verify-only", "--writer-ranks", str(case.ranks)]
        self._run(out, renv, self.launcher.command(other, [*argv, "--driver", "default"]), work)
        # reconstructed by `other` processes, the index resolved in address windows of a
        # few records each (as a directory larger than h5mf's --memory is); at most 64
        # windows: every window reads every index again (tens of thousands of records in
        # windows of a few ran past the step's time limit)
        merged = os.path.join(work, "merged.h5")
        info, _ = self._run(out, env, ["h5mf", "info", "--json", d], work)  # stdout: the JSON alone
        menv = dict(env, H5MF_TEST_WINDOW_RECORDS=str(window_records(case.seed, json.loads(info.stdout)["records"])))
        self._run(out, menv, self.launcher.command(other, ["h5mf", "merge", "-q", d, "-o", merged]), work)
        return merged

    def _dsm(self, case, env, work, out):
        distribution = case.variant.split(":", 1)[1]
        wenv = self._perturbed(case, env, clocks=False)
        server = ["h5dsm-server", "--size", "16m", "--distribution", distribution, "--action", "dump:dump_{step}.h5"]
        client = ["h5fuzz", "mem.h5", *self._fuzz_args(case), "--driver", "dsm", "--no-verify"]
        cmd = self.launcher.mpmd([(2, server), (case.ranks, client)], work)
        self._run(out, wenv, cmd, work)
        dumps = sorted((f for f in os.listdir(work) if f.startswith("dump_")), key=lambda f: int(f[5:-3]))
        if not dumps:
            raise CaseFailed("the DSM server dumped no file")
        if os.path.exists(os.path.join(work, "mem.h5")):
            raise CaseFailed("the file the clients named reached the disk")
        return os.path.join(work, dumps[-1])

    def _judge(self, out, env, case, result, work):
        """The result against the model, value by value (serially, as an ordinary file)."""
        argv = ["h5fuzz", result, *self._fuzz_args(case), "--verify-only", "--writer-ranks", str(case.ranks)]
        proc, text = self._run(out, env, [*argv, "--driver", "sec2"], work, expect_ok=False)
        if proc.returncode == DIFFERS:
            raise CaseFailed(f"the result differs from the workload's model:\n{text[-3000:]}")
        if proc.returncode != 0:
            raise CaseFailed(f"exit {proc.returncode}: {' '.join(argv)}\n{text[-3000:]}")

    def _compare(self, out, env, ref, result, work):
        """h5diff of the reference and the result over what the model defines: silent and
        exit 0. The datasets with undefined elements are left out (the model check covers
        their defined elements). h5diff exits 0 on "not comparable" too: that passes only
        for datasets with no storage in both files (a filtered dataset never written),
        which h5diff calls empty."""
        exclude = [a for d, _, _ in ref.undefined for a in ("--exclude-path", d)]
        proc, text = self._run(out, env, ["h5diff", *exclude, ref.path, result], work, expect_ok=False)
        if proc.returncode == 0 and text.strip().startswith("---") and "not comparable" in text:
            _, listing = self._run(out, env, ["h5diff", "-c", *exclude, ref.path, result], work, expect_ok=False)
            empty = re.findall(r"^Not comparable: <(\S+)> or <\S+> is an empty dataset$", listing, re.M)
            other = [line for line in listing.splitlines() if line.startswith("Not comparable") and "empty" not in line]
            if (
                empty
                and not other
                and all(self._no_storage(out, env, f, d, work) for d in empty for f in (ref.path, result))
            ):
                return
        if proc.returncode != 0 or text.strip():
            raise CaseFailed(f"h5diff {ref.path} {result} (exit {proc.returncode}):\n{text[-3000:]}")

    def _no_storage(self, out, env, path, dataset, work):
        _, text = self._run(out, env, ["h5dump", "-p", "-H", "-d", dataset, path], work)
        return re.search(r"^\s*SIZE 0 ", text, re.M) is not None

    def run(self, case):
        out = Outcome(case, ok=False)
        t0 = time.monotonic()
        env = process_env(self.desc(case.stack))
        name = case.case or f"{case.seed}-{case.ranks}r-{case.ops}o"  # minimising keeps the failure's files
        work = os.path.join(self.workroot, case.stack, case.variant.replace(":", "_"), name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        out.workdir = work
        ref = None
        try:
            self.check_plan(case, env)
            ref = self.reference(case, env, out)
            out.mpiio_fault, out.reference, out.reference_failed = ref.fault, ref.command, ref.failed
            result = (
                self._dsm(case, env, work, out)
                if case.variant.startswith("dsm:")
                else self._multifile(case, env, work, out)
            )
            self._judge(out, env, case, result, work)
            if not (ref.fault or ref.failed):  # a reference that differs from the model is no measure
                self._compare(out, env, ref, result, work)
                out.compared = True
            out.ok = True
        except CaseFailed as e:
            out.message = str(e)
            if ref is not None and not ref.failed:
                out.reference_failed = self._fails_with_mpiio_too(case, env, out, out.message)
        out.seconds = time.monotonic() - t0
        if out.ok and not self.keep:
            shutil.rmtree(work, ignore_errors=True)
        return out

    def _fails_with_mpiio_too(self, case, env, out, message):
        """A variant that failed in an HDF5 call ("operation K failed: CALL") where the
        reference ran: the reference runs again, slowed at other points, up to
        REFERENCE_TRIES times. The reason when one of those runs fails in the same
        operation (HDF5 fails the workload now and then, whatever the driver), else ""."""
        m = OP_FAILED.search(message)
        if not m:
            return ""
        d = os.path.join(self.workroot, case.stack, "reference", "again")
        for k in range(1, REFERENCE_TRIES + 1):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            renv = self._perturbed(replace(case, seed=case.seed + k), env, clocks=False)
            try:
                proc, text = self._run(out, renv, self.reference_command(case, os.path.join(d, "ref.h5")), d, False)
            except CaseFailed:  # a hang: no verdict on the operation
                continue
            again = OP_FAILED.search(text)
            if proc.returncode != 0 and again and again.group(1) == m.group(1):
                return (
                    f"exit {proc.returncode} in run {k} of up to {REFERENCE_TRIES} (HDF5 with MPI-IO fails operation "
                    f"{m.group(1)}, {m.group(2)}, now and then, as the variant did):\n{text[-2000:]}"
                )
        return ""

    def check_plan(self, case, env):
        """A regression seed must still give the plan it was recorded with: a change of the
        generator would otherwise silently make it another workload."""
        if not case.plan:
            return
        got = plan_digest(case, env)
        if got != case.plan:
            raise CaseFailed(
                f"{REGRESSIONS}: seed {case.seed} (grammar {case.grammar}, {case.ops} operations, {case.ranks} "
                f"ranks) now plans {got}, recorded as {case.plan}: the generator changed what this seed means; "
                "find the seed that gives the old workload, or record the new plan once it has been checked"
            )

    def minimise(self, case):
        """The fewest operations of a failing seed that still fail (a shorter plan is a prefix)."""
        if case.case:
            return case
        lo, hi = 1, case.ops  # hi fails
        while lo < hi:
            mid = (lo + hi) // 2
            trial = replace(case, ops=mid, plan="")  # a prefix of the plan: another digest
            if self.run(trial).ok:
                lo = mid + 1
            else:
                hi = mid
        return replace(case, ops=hi, plan="")


def plan_digest(case, env):
    """`h5fuzz --plan` of a seed's workload for case.ranks writer ranks (one process)."""
    argv = ["h5fuzz", "--plan", "--seed", str(case.seed), "--ops", str(case.ops), "--grammar", str(case.grammar),
            "--writer-ranks", str(case.ranks)] + (["--all-ranks"] if case.all_ranks else [])  # fmt: skip
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or not proc.stdout.startswith("plan "):
        raise CaseFailed(f"{' '.join(argv)}: exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-500:]}")
    return proc.stdout.split()[1]


class CaseFailed(Exception):
    pass


def report_failure(runner, outcome, minimise=True):
    """The failure's message, its replay command (minimised) and where its files are; a
    variant failing where the MPI-IO reference fails too is NOT JUDGED (not minimised)."""
    case = outcome.case
    unjudged = bool(outcome.reference_failed)
    small = runner.minimise(case) if minimise and not unjudged else case
    how = "" if runner.launcher.kind == "mpiexec" else f" --launcher {runner.launcher.kind}"
    title = "NOT JUDGED (the MPI-IO reference fails too)" if unjudged else "FAILED"
    lines = [
        f"{title}: {case.label()}",
        outcome.message.rstrip(),
        *(["(the MPI-IO reference differs from the model too: not compared with it)"] if outcome.mpiio_fault else []),
        *([f"(the MPI-IO reference fails: {known.said(outcome.reference_failed)})"] if unjudged else []),
        f"steps: {' ; '.join(outcome.steps)}",
        f"files: {outcome.workdir}",
        f"replay: {case.replay()}{how}",
    ]
    if small != case:
        lines.append(f"minimised ({small.ops} operations): {small.replay()}{how}")
    return "\n".join(lines)


def report_mpiio_fault(outcome):
    """An MPI-IO reference that differs from the model: what differs and the MPI program
    that wrote it (within the stack's environment: eval "$(./h5stack env STACK)")."""
    case = outcome.case
    what = f"case {case.case}" if case.case else f"seed {case.seed}"
    return "\n".join(
        [
            f"MPI-IO FAULT: {case.stack} {what} ({case.ranks} ranks, {case.ops} operations): {outcome.mpiio_fault.rstrip()}",
            f"replay (the MPI-IO run alone, in ./h5stack env {case.stack}): {outcome.reference}",
            "the variants of this workload are judged against the model alone; the MPI-IO faults known so far, "
            "each with its program and site check: docs/faults.md",
        ]
    )


def report_reference_failure(outcome):
    """A workload that HDF5 with MPI-IO itself cannot run: HDF5's fault, MPI-IO's or the
    generator's (a call HDF5 refuses); its variants are judged against the model alone."""
    case = outcome.case
    what = f"case {case.case}" if case.case else f"seed {case.seed} (grammar {case.grammar})"
    return "\n".join(
        [
            f"REFERENCE FAILS: {case.stack} {what} ({case.ranks} ranks, {case.ops} operations): "
            f"{outcome.reference_failed.rstrip()}",
            f"replay (the MPI-IO run alone, in ./h5stack env {case.stack}): {outcome.reference}",
            "its variants are judged against the model alone (one that fails too is not judged); "
            + known.said(outcome.reference_failed),
        ]
    )


def check_capabilities():
    """Time namespaces and libfaketime: say what is missing."""
    try:
        subprocess.run(["unshare", "--time", "--fork", "true"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        raise StepError("unshare --time fails here (needs CAP_SYS_ADMIN and Linux >= 5.6): run as root, "
                        "or give --no-perturb") from None  # fmt: skip
    if not glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1") + glob.glob("/usr/lib/faketime/libfaketimeMT.so.1"):
        raise StepError("libfaketime is missing (Debian: faketime, in requirements/debian.txt)")


def selection(runner, stack_names, drivers):
    """(stack, variant) pairs: the stacks given (default: those in use, Stacks.in_use) x their
    variants (or those given)."""
    pairs = []
    for name in stack_names or [s.name for s in runner.stacks.in_use()]:
        offered = variants(runner.desc(name))
        chosen = [v for v in offered if not drivers or v in drivers or v.split(":")[0] in drivers]
        pairs += [(name, v) for v in chosen]
    if not pairs:
        raise StepError(f"no stack offers the driver(s) {', '.join(drivers)}" if drivers else "no stack has h5fuzz")
    return pairs


def regressions():
    """The fixed workloads that once exposed faults (packages/h5fuzz/regressions.yaml)."""
    with open(REGRESSIONS) as f:
        entries = yaml.safe_load(f)
    for e in entries:
        if ("seed" in e) == ("case" in e) or not e.get("fault") or "ranks" not in e:
            raise StepError(f"{REGRESSIONS}: an entry needs a seed or a case, ranks and its fault: {e}")
        every = [False, True] if e.get("grammar", 1) >= SESSIONS_GRAMMAR else [False]
        for ranks in sorted({e["ranks"], min(e["ranks"], 2)}) if "seed" in e else ():
            for all_ranks in every:  # the DSM's cases run on 2, in grammar 5 on with all ranks
                if not recorded_plan(e, ranks, all_ranks):
                    key = "plans_all_ranks" if all_ranks else "plans"
                    raise StepError(
                        f"{REGRESSIONS}: seed {e['seed']}: no {key} recorded for {ranks} ranks (h5fuzz --plan)"
                    )
    return entries


def regression_case(stack, variant, entry, perturb=True, ranks=None):
    """One regression entry as a case (on its ranks, or on `ranks`), or None where it does
    not apply (applies())."""
    if not applies(variant, entry.get("grammar", 1), entry.get("case", "")):
        return None
    case = Case(
        stack,
        variant,
        entry.get("seed", 0),
        ranks or entry["ranks"],
        entry.get("ops", 60),
        case=entry.get("case", ""),
        perturb=perturb,
        grammar=entry.get("grammar", 1),
    )
    return replace(case, plan=recorded_plan(entry, case.ranks, case.all_ranks))


def recorded_plan(entry, ranks, all_ranks=False):
    """The plan digest regressions.yaml records for a seed entry on this many ranks (with
    h5fuzz --all-ranks: from its plans_all_ranks)."""
    plans = entry.get("plans_all_ranks" if all_ranks else "plans", {})
    return str(plans.get(ranks, "")) if "seed" in entry else ""


@dataclass(frozen=True)
class Options:
    """What `./h5stack fuzz` was asked (typed; built from the command line by commands/fuzz.py)."""

    seeds: int = 10  # workloads to try
    seconds: float = 0.0  # stop after this long instead (0: no time limit)
    seed: Optional[int] = None  # this seed only (a replay); None: seeds from a random start
    case: str = ""  # a fixed workload of h5fuzz instead of seeds
    regressions: bool = False  # the workloads of packages/h5fuzz/regressions.yaml instead
    stacks: tuple = ()  # stack names (default: those in use)
    drivers: tuple = ()  # variants (default: all a stack offers)
    ranks: Optional[int] = None  # ranks of every workload (None: 1..max_ranks by seed)
    max_ranks: int = 8
    ops: int = 60  # operations per workload
    grammar: int = 1  # h5fuzz's generator
    perturb: bool = True  # slowed ranks and clocks of their own
    minimise: bool = True  # minimise failures before reporting them
    keep: bool = False  # keep the files of passing cases too
    launcher: str = "mpiexec"  # mpiexec or srun
    json: str = ""  # write the run's cases and totals as JSON to this file


def _cases(opts, pairs, entries=None):
    """The cases of the run, lazily: every pair for each seed in turn (for each entry
    of regressions.yaml, with --regressions)."""
    if entries is not None:
        cases = (regression_case(s, v, e, perturb=opts.perturb) for e in entries for s, v in pairs)
        yield from (c for c in cases if c)
        return
    if opts.case:
        for stack, variant in pairs:
            yield Case(stack, variant, 0, opts.ranks or 4, opts.ops, case=opts.case, perturb=opts.perturb)
        return
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(1, 1 << 31)
    for k in range(opts.seeds if opts.seed is None else 1):
        s = seed + k
        ranks = opts.ranks or 1 + s % opts.max_ranks
        for stack, variant in pairs:
            yield Case(stack, variant, s, ranks, opts.ops, perturb=opts.perturb, grammar=opts.grammar)


def runnable(pairs, opts):
    """The pairs that can run the workloads of opts (applies()), the others named once
    (none is an error)."""
    able = [p for p in pairs if applies(p[1], opts.grammar, opts.case or "")]
    if len(able) < len(pairs):
        left = ", ".join(f"{s} {v}" for s, v in pairs if (s, v) not in able)
        info(f"fuzz: case {opts.case} tests multifile's metadata stamps, which the DSM has none of: left out: {left}")
    pairs = able
    if not pairs:
        raise StepError(f"no variant chosen can run {'case ' + opts.case if opts.case else 'these workloads'}")
    return pairs


def run(opts):
    """./h5stack fuzz: run cases until the seeds or the time are used up; a summary. Exit
    status 1 when a variant failed, or failed where the reference cannot run the workload
    either (not judged); MPI-IO faults and references that cannot run are printed and
    counted, not failures of the variants."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if opts.perturb:
        check_capabilities()
    runner = Runner(keep=opts.keep, launcher=Launcher(opts.launcher))
    pairs = runnable(selection(runner, list(opts.stacks), list(opts.drivers)), opts)
    nodes = runner.launcher.preflight(process_env(runner.desc(pairs[0][0])))
    info(f"fuzz: ranks started by {opts.launcher} on {len(nodes)} node(s): {', '.join(nodes)}")
    entries = regressions() if opts.regressions else None
    if entries is not None:
        total = sum(1 for _ in _cases(opts, pairs, entries))
    else:
        total = len(pairs) * (1 if opts.case or opts.seed is not None else opts.seeds)
    t0, tally = time.monotonic(), Tally()
    plain = Console(emoji=False, highlight=False)  # replay lines are printed as they are ("dsm:mask:16m")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=plain, disable=not os.isatty(2)) as bar:  # fmt: skip
        task = bar.add_task("fuzz", total=None if opts.seconds else total)
        for case in _cases(opts, pairs, entries):
            if opts.seconds and time.monotonic() - t0 > opts.seconds:
                break
            bar.update(task, description=case.label())
            outcome = runner.run(case)
            for text in tally.add(outcome):
                bar.console.print(text if text != FAILED else report_failure(runner, outcome, opts.minimise),
                                  markup=False)  # fmt: skip
            if outcome.ok and not os.isatty(2):
                info(f"ok: {case.label()} in {outcome.seconds:.1f} s")
            bar.advance(task)
    info(tally.summary(time.monotonic() - t0))
    status = 1 if tally.failures or tally.unjudged else 0
    if opts.json and not tally.write_json(
        opts.json, launcher=opts.launcher, nodes=nodes, seconds=round(time.monotonic() - t0, 1)
    ):
        status = 1
    return status


def case_record(outcome):
    """One case of a run and its verdict: ok (judged against the model, and against the
    reference where it is right), failed (the variant), or unjudged (the variant fails
    where the MPI-IO reference cannot run the workload either); mpiio_fault: the reference
    differs from the model; reference_failed: it cannot run the workload."""
    case = outcome.case
    verdict = "ok" if outcome.ok else ("unjudged" if outcome.reference_failed else "failed")
    return {
        "stack": case.stack, "variant": case.variant, "seed": case.seed, "case": case.case, "grammar": case.grammar,
        "ranks": case.ranks, "ops": case.ops, "verdict": verdict, "mpiio_fault": bool(outcome.mpiio_fault),
        "reference_failed": bool(outcome.reference_failed), "h5diff": outcome.compared,
        "seconds": round(outcome.seconds, 1), "replay": case.replay(),
    }  # fmt: skip


FAILED = object()  # Tally.add's mark for a variant's failure (reported with its replay: report_failure)


@dataclass
class Tally:
    """What a run found: variants that failed, MPI-IO references that differ from the model
    and workloads HDF5 with MPI-IO cannot run (each reference reported once)."""

    done: int = 0
    ops: int = 0
    seeds: set = field(default_factory=set)
    failures: list = field(default_factory=list)
    faults: set = field(default_factory=set)
    broken: set = field(default_factory=set)
    unjudged: int = 0
    cases: list = field(default_factory=list)  # one record per case, for --json

    def add(self, outcome):
        """Count the outcome; what to print about it (FAILED for a variant's failure)."""
        case, reports = outcome.case, []
        self.done, self.ops, self.seeds = self.done + 1, self.ops + case.ops, self.seeds | {case.seed}
        self.cases.append(case_record(outcome))
        if outcome.reference_failed:
            if outcome.reference not in self.broken:
                self.broken.add(outcome.reference)
                reports.append(report_reference_failure(outcome))
            if not outcome.ok:
                self.unjudged += 1
                reports.append(FAILED)
            return reports
        if outcome.mpiio_fault and outcome.reference not in self.faults:
            self.faults.add(outcome.reference)
            reports.append(report_mpiio_fault(outcome))
        if not outcome.ok:
            self.failures.append(outcome)
            reports.append(FAILED)
        return reports

    def totals(self):
        return {
            "seeds": len(self.seeds), "cases": self.done, "operations": self.ops, "failures": len(self.failures),
            "mpiio_faults": len(self.faults), "reference_failures": len(self.broken), "unjudged": self.unjudged,
        }  # fmt: skip

    def write_json(self, path, **run):
        """The run as JSON for programs: how it ran, the totals, every case with its verdict."""
        return results.write_json(path, {**run, "totals": self.totals(), "cases": self.cases})

    def summary(self, seconds):
        return (
            f"fuzz: {len(self.seeds)} seed(s), {self.done} case(s), {self.ops} operations, "
            f"{len(self.failures)} failure(s), {len(self.faults)} MPI-IO fault(s), "
            f"{len(self.broken)} workload(s) the MPI-IO reference cannot run ({self.unjudged} case(s) failing with it, "
            f"not judged) "
            f"in {fmt_seconds(seconds)}"
        )
