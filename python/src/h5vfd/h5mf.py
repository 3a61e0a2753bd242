# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""h5mf's operations as functions: info, verify and merge of a multifile directory.

They run the stack's `h5mf` program (on PATH after `eval "$(./h5stack env STACK)"`, or
named by H5VFD_H5MF), so a directory is read by the same code whatever the caller;
a failure raises H5mfError with the tool's own message. They may be called from
inside an MPI program: h5mf starts as a process of its own (its MPI environment
cleared), on `processes` ranks through mpiexec when more than one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from typing import Callable

from .errors import H5mfError

#: progress(phase, done, total): phase "verifying" or "merging", bytes
Progress = Callable[[str, int, int], None]


@dataclasses.dataclass(frozen=True)
class RankInfo:
    rank: int
    records: int
    bytes: int
    data_size: int
    uncommitted_records: int
    torn: int


@dataclasses.dataclass(frozen=True)
class MultifileInfo:
    """`h5mf info --json`: what a multifile directory holds."""

    path: str
    format: int
    ranks: int
    state: str  # "complete", or "writing" (the writer did not close it)
    committed_epochs: int
    eoa: int
    records: int
    bytes: int
    uncommitted_records: int
    torn_indexes: int
    extents: int
    reconstructed_size: int
    damaged: bool
    per_rank: tuple[RankInfo, ...]

    @property
    def complete(self) -> bool:
        return self.state == "complete"


def program() -> str:
    found = os.environ.get("H5VFD_H5MF") or shutil.which("h5mf")
    if not found:
        raise H5mfError(["h5mf"], 127, 'h5mf is not on PATH (eval "$(./h5stack env STACK)", or set H5VFD_H5MF)')
    return found


def _environment() -> dict[str, str]:
    """This process's environment without the variables that make an MPI process a
    rank of the caller's job (the caller may itself run under mpiexec or srun)."""
    launched = (
        "OMPI_MCA_ess", "OMPI_MCA_orte_", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir", "OMPI_MCA_shmem_RUNTIME_QUERY_hint",
        "OMPI_MCA_mpi_oversubscribe",  # Open MPI's launcher sets these; the user's own OMPI_MCA_* stay
    )  # fmt: skip
    keep = ("OMPI_MCA_", "OMPI_ALLOW_RUN_AS_ROOT")
    drop = ("OMPI_", "PMIX_", "PMI_", "HYDRA_", "MPI_LOCALNRANKS", "MPI_LOCALRANKID", "SLURM_STEP_", "SLURM_PROCID")
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(launched) and (k.startswith(keep) or not k.startswith(drop))
    }


def _switch(name: str, value: object) -> bool:
    """A parameter that is a switch: True or False only (the string "no" is true)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return value


def _command(args: list[str], processes: int) -> list[str]:
    if isinstance(processes, bool) or not isinstance(processes, int):
        raise TypeError(f"processes must be an int, not {processes!r}")
    if processes < 1:
        raise ValueError(f"processes must be at least 1, not {processes}")
    launch = ["mpiexec", "-n", str(processes)] if processes > 1 else []
    return [*launch, program(), *args]


def _run(args: list[str], processes: int = 1) -> str:
    cmd = _command(args, processes)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_environment())
    if proc.returncode != 0:
        raise H5mfError(cmd, proc.returncode, _message(proc.stderr))
    return proc.stdout


def _message(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("h5mf-progress ")]
    return "\n".join(lines).strip()


def info(path: str | os.PathLike) -> MultifileInfo:
    """What the directory holds (ranks, records, bytes, completion; any damage named)."""
    data = json.loads(_run(["info", os.fspath(path), "--json"]))
    data["per_rank"] = tuple(RankInfo(**r) for r in data["per_rank"])
    return MultifileInfo(**data)


def verify(path: str | os.PathLike, partial: bool = False, processes: int = 1) -> str:
    """Check the metafile, every index record and every data checksum: the tool's summary.
    partial (True or False only): accept a directory whose writer did not close it (its
    completed flushes)."""
    return _run(["verify", os.fspath(path), *(["--partial"] if _switch("partial", partial) else [])], processes).strip()


def merge(
    path: str | os.PathLike,
    output: str | os.PathLike | None = None,
    partial: bool = False,
    force: bool = False,
    verify: bool = True,
    processes: int = 1,
    progress: Progress | None = None,
) -> str:
    """Reconstruct the ordinary HDF5 file: into output (the directory kept), or in place of
    the directory (atomically). partial: use every completed flush of a directory whose
    writer did not close it (needs output). progress(phase, done, total) is called as the
    work goes on; without it a progress bar is shown when stderr is a terminal. The
    switches (partial, force, verify) take True or False only: TypeError otherwise."""
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a function or None, not {progress!r}")
    args = ["merge", os.fspath(path)]
    args += ["-o", os.fspath(output)] if output is not None else []
    args += ["--partial"] if _switch("partial", partial) else []
    args += ["--force"] if _switch("force", force) else []
    args += [] if _switch("verify", verify) else ["--no-verify"]
    bar = None
    if progress is None and sys.stderr.isatty():
        bar, progress = _terminal_bar()
    cmd = _command([*args, "--progress-lines" if progress else "-q"], processes)
    try:
        out, err, rc = _stream(cmd, progress)
    finally:
        if bar is not None:
            bar.stop()
    if rc != 0:
        raise H5mfError(cmd, rc, _message(err))
    return out.strip()


def _stream(cmd: list[str], progress: Progress | None) -> tuple[str, str, int]:
    """Run cmd; progress lines on its stderr go to progress, the rest is kept."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_environment()) as p:
        kept = []
        for line in p.stderr:
            parts = line.split()
            if progress and len(parts) == 4 and parts[0] == "h5mf-progress":
                progress(parts[1], int(parts[2]), int(parts[3]))
            else:
                kept.append(line)
        out = p.stdout.read()
        return out, "".join(kept), p.wait()


def _terminal_bar():
    """A rich progress bar when rich is importable, else a plain one."""
    try:
        from rich.progress import Progress as Bar
    except ImportError:

        def plain(phase: str, done: int, total: int) -> None:
            sys.stderr.write(f"\r  {phase:<9} {100 * done / max(total, 1):5.1f}%" + ("\n" if done >= total else ""))

        return None, plain
    bar = Bar(transient=False)
    bar.start()
    tasks: dict[str, int] = {}

    def update(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = bar.add_task(phase, total=total)
        bar.update(tasks[phase], completed=done, total=total)

    return bar, update
