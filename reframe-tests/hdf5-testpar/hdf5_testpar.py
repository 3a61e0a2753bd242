# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""HDF5's own parallel test suite (testpar: testphdf5 and the t_* programs), built with
the environment's HDF5 and MPI, run as a site check: through HDF5's MPI-IO driver (the
programs as HDF5 ships them) and through multifile (the driver package's preload library
turns their H5Pset_fapl_mpio into the driver, HDF5_DRIVER=multifile).

- hdf5_testpar %driver=mpio %ranks=2: every program but the long ones must pass.
- hdf5_testpar %driver=multifile %ranks=2: every program but the long ones and those the
  driver package's exclusions.yaml (`parallel`) leaves out, each with its reason.

Each program is bounded (`bound`, seconds): one that has not ended by then is a hang,
reported with the stacks of its processes on the job's node (gdb, where installed), and
killed; the next program runs. Programs run one after the other in the stage directory.
`-S hdf5_testpar.share=K/N` runs every N-th program from the K-th (a share a night);
`-S hdf5_testpar.long=yes` adds the programs that take minutes each (exclusions.yaml
`full_only`: t_bigio, t_2Gio, t_filters_parallel). Variants with more ranks than a job of
the partition has CPUs (a node's, times the nodes of a multi-node partition's jobs) are
skipped (oversubscribed ranks busy-wait).

Runs on every environment whose extras name the directory of its HDF5's testpar programs
(`hdf5_testpar`; feature `hdf5-testpar`: the local plain stacks of the series whose
source ships them), the multifile variant where the multifile package is installed too.
"""

import os
import shlex
import sys

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks import bounded, testpar  # noqa: E402
from h5checks.mpi import mpi_sanity, mpio_probe_cmds, mpio_probe_sanity, ranks_probe_cmds  # noqa: E402
from h5checks.nodes import MultiNodeMixin, job_cpus  # noqa: E402


@rfm.simple_test
class hdf5_testpar(bounded.SuiteMixin, MultiNodeMixin, rfm.RunOnlyRegressionTest):
    driver = parameter(["mpio", "multifile"])
    ranks = parameter([2, 4])
    valid_systems = ["*"]
    valid_prog_environs = ["+hdf5-testpar"]
    tags = {"hdf5", "correctness", "testpar"}
    sourcesdir = None

    #: also the programs that take minutes each (exclusions.yaml full_only)
    long = variable(typ.Bool, value=False)

    @run_after("setup")
    def choose(self):
        cpus = job_cpus(self)
        self.skip_if(bool(cpus) and self.ranks > cpus,
                     f"{self.ranks} ranks on {cpus} CPUs: oversubscribed MPI ranks busy-wait for minutes")  # fmt: skip
        self.num_tasks = self.ranks
        self.descr = f"HDF5's testpar through {self.driver} on {self.ranks} ranks"
        names = testpar.found(self.current_environ.extras["hdf5_testpar"])
        known = self.current_environ.extras.get("hdf5_testpar_known")
        self.programs, self.left_out = testpar.select(names, self.driver, self.share, self.long, known=known)
        self.allow_runs(len(self.programs))

    @run_before("run")
    def set_commands(self):
        srun = type(self.job.launcher).registered_name == "srun"
        if srun:  # a rank's failure ends the program's job step
            self.job.launcher.options += ["--kill-on-bad-exit=1"]
        self.job.num_tasks = self.num_tasks
        launch = self.job.launcher.run_command(self.job).split()
        env = self.preload_words("HDF5_DRIVER")  # on each rank: the programs' H5Pset_fapl_mpio becomes the driver
        self.prerun_cmds = [f"echo {shlex.quote(f'left out: {n}: {why}')}" for n, why in self.left_out.items()]
        self.prerun_cmds += ranks_probe_cmds(self, launch)  # which MPI runs the job, on how many ranks
        self.prerun_cmds += mpio_probe_cmds(self, [*launch, *env])  # which driver the programs get
        directory = self.current_environ.extras["hdf5_testpar"]
        runs = []
        for entry in self.programs:
            name, _, args = entry.partition("=")
            exe = os.path.join(directory, name)
            # t_pflush1 ends with _exit(1) by design, its files left for t_pflush2 (under srun,
            # whose --kill-on-bad-exit may end the other rank first: 137)
            statuses = ((1, 137) if srun else (1,)) if name == "t_pflush1" else (0,)
            runs.append(bounded.Run(name, exe, [*launch, *env, exe, *args.split()], statuses))
        self.job.launcher = getlauncher("local")()  # the runner starts each program with the launcher
        self.executable = bounded.runner_command(self, "testpar", self.bound, runs)

    @sanity_function
    def validate(self):
        names = [p.split("=")[0] for p in self.programs]
        return sn.all(
            mpi_sanity(self) + [mpio_probe_sanity(self, self.driver)] + bounded.runs_sanity(self, "testpar", names)
        )
