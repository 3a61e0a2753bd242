# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""How h5stack's own tools start MPI programs: the MPI's `mpiexec` (this node), or
Slurm's `srun` (the nodes of the allocation it runs in, ranks dealt round-robin).

srun takes the PMI of the MPI from the environment (SLURM_MPI_TYPE, or the site's
MpiDefault), as on any Slurm cluster; `--overcommit` lets more ranks than the
allocation's CPUs run, as `mpiexec` does here.
"""

import os
import shutil
import subprocess

from h5stack.base.ui import StepError

KINDS = ("mpiexec", "srun")
SRUN = ["srun", "--overcommit", "--distribution=cyclic", "--kill-on-bad-exit=1"]


class Launcher:
    def __init__(self, kind="mpiexec"):
        if kind not in KINDS:
            raise StepError(f"launcher {kind!r}: one of {', '.join(KINDS)}")
        self.kind = kind

    def command(self, ranks, argv):
        """One program on `ranks` ranks."""
        if self.kind == "srun":
            return [*SRUN, f"--ntasks={ranks}", *argv]
        return ["mpiexec", "-n", str(ranks), *argv]

    def mpmd(self, groups, workdir):
        """Several programs in one MPI_COMM_WORLD: groups of (ranks, argv), ranks in order.
        srun reads them from a --multi-prog file written into workdir."""
        if self.kind == "mpiexec":
            cmd = ["mpiexec"]
            for i, (ranks, argv) in enumerate(groups):
                cmd += ([":"] if i else []) + ["-n", str(ranks), *argv]
            return cmd
        lines, first = [], 0
        for ranks, argv in groups:
            if any(c.isspace() or c in "%'\"\\" for arg in argv for c in arg):
                raise StepError(f"srun --multi-prog cannot carry the argument list {argv}")
            lines.append(f"{first}-{first + ranks - 1} {' '.join(argv)}")
            first += ranks
        conf = os.path.join(workdir, "multi-prog.conf")
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        return [*SRUN, f"--ntasks={first}", "--multi-prog", conf]

    def preflight(self, env):
        """The nodes ranks will be dealt over (srun: the allocation's), or raise why not."""
        if self.kind == "mpiexec":
            return [os.uname().nodename]
        if not shutil.which("srun", path=env.get("PATH")):
            raise StepError("--launcher srun: srun is not on PATH (Slurm's client commands are needed)")
        if "SLURM_JOB_ID" not in env:
            raise StepError("--launcher srun: run inside a Slurm allocation (salloc -N2 ..., or an sbatch script)")
        nodes = int(env.get("SLURM_JOB_NUM_NODES", "1"))
        proc = subprocess.run(
            [*SRUN, f"--ntasks={nodes}", "hostname"], env=env, capture_output=True, text=True, timeout=120
        )
        if proc.returncode != 0:
            raise StepError(f"--launcher srun: `srun hostname` failed: {(proc.stdout + proc.stderr).strip()[-500:]}")
        return sorted(set(proc.stdout.split()))
