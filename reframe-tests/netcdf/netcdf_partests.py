# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""netCDF-C's own parallel tests (partests.yaml: the programs of nc_test4/run_par_test.sh
and h5_test/run_par_tests.sh at the rank counts of those scripts), compiled from the
environment's netCDF source tree against its installed library, run as a site check:
through HDF5's MPI-IO driver (netCDF calls H5Pset_fapl_mpio itself) and through multifile
(the driver package's preload library turns that call into the driver,
H5MF_MPIO_DRIVER=multifile; files netCDF writes serially stay HDF5's serial driver's).

- netcdf_partests %driver=mpio: every program of the list passes.
- netcdf_partests %driver=multifile: the same, unmodified, through multifile.

Each program runs in a directory of its own, bounded (`bound`, seconds): one that has
not ended by then is a hang, reported with its processes' stacks (h5checks/bounded.py).
`-S netcdf_partests.share=K/N` runs every N-th run from the K-th; `-S
netcdf_partests.full=yes` adds the counts of partests.yaml's `full_only` (up to 16
ranks). Runs of more ranks than the partition's CPUs run oversubscribed.

Runs on every environment whose extras name netCDF-C's source and build trees
(`netcdf_source`, `netcdf_build`; feature `netcdf-tests`: the local 1.14 plain stacks,
which keep them), the multifile variant where the multifile package is installed too.
"""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
import yaml
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks import bounded  # noqa: E402
from h5checks.mpi import mpi_sanity, mpio_probe_cmds, mpio_probe_sanity, ranks_probe_cmds  # noqa: E402
from h5checks.nodes import MultiNodeMixin  # noqa: E402

LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "partests.yaml")


def runs_of(full):
    """(program, ranks) of partests.yaml in its order; with full also the full_only counts."""
    with open(LIST) as f:
        entries = yaml.safe_load(f)["runs"]
    return [(e["program"], n) for e in entries for n in e["ranks"] + (e.get("full_only", []) if full else [])]


@rfm.simple_test
class netcdf_partests(bounded.SuiteMixin, MultiNodeMixin, rfm.RunOnlyRegressionTest):
    driver = parameter(["mpio", "multifile"])
    valid_systems = ["*"]
    valid_prog_environs = ["+netcdf-tests"]
    tags = {"netcdf", "correctness"}
    sourcesdir = None

    #: also the counts of full_only (up to 16 ranks)
    full = variable(typ.Bool, value=False)

    @run_after("setup")
    def choose(self):
        self.runs = self.share_of(runs_of(self.full))
        self.num_tasks = max([ranks for _, ranks in self.runs] + [1])
        self.allow_runs(len(self.runs))
        self.descr = f"netCDF-C's parallel tests through {self.driver}"

    def launch(self, ranks):
        """The launcher's words for a run of `ranks` ranks."""
        if type(self.job.launcher).registered_name == "srun":
            return self.job.launcher.run_command(self.job).split() + ["-n", str(ranks)]
        self.job.num_tasks = ranks
        words = self.job.launcher.run_command(self.job).split()
        self.job.num_tasks = self.num_tasks
        return words

    def compile_cmds(self):
        """netCDF's test programs compiled from its source tree (config.h from the build
        tree) against the installed library, into bin/."""
        src, build = self.current_environ.extras["netcdf_source"], self.current_environ.extras["netcdf_build"]
        flags = (
            f"-I{src}/include -I{build} -I{build}/include $(nc-config --libs) -Wl,-rpath,$(nc-config --prefix)/lib -lm"
        )
        cc = self.current_environ.cc or "mpicc"
        return [f"mkdir -p bin/{os.path.dirname(p)} && {cc} -O1 -w -o bin/{p} {src}/{p}.c {flags}"
                for p in sorted({p for p, _ in self.runs})]  # fmt: skip

    @run_before("run")
    def set_commands(self):
        env = self.preload_words("H5MF_MPIO_DRIVER")  # netCDF's H5Pset_fapl_mpio becomes the driver
        runs = []
        for program, ranks in self.runs:
            name = f"{os.path.basename(program)}-{ranks}"
            exe = os.path.join(self.stagedir, "bin", program)
            runs.append(bounded.Run(name, exe, [*self.launch(ranks), *env, exe], cwd=os.path.join(self.stagedir, name)))
        self.prerun_cmds = [
            "set -e",
            *self.compile_cmds(),
            *ranks_probe_cmds(self, self.launch(self.num_tasks)),
            *mpio_probe_cmds(self, [*self.launch(self.num_tasks), *env]),  # which driver netCDF gets
            "set +e",
        ]
        self.job.launcher = getlauncher("local")()  # the runner starts each program with the launcher
        self.executable = bounded.runner_command(self, "netcdf", self.bound, runs)
        if self.driver == "multifile":  # the driver wrote its files: a directory of each beside its head
            self.postrun_cmds = ["ls -d */*.h5mf > /dev/null 2>&1 && echo 'layout: multifile directories'"]

    @sanity_function
    def validate(self):
        names = [f"{os.path.basename(p)}-{n}" for p, n in self.runs]
        checks = mpi_sanity(self) + [mpio_probe_sanity(self, self.driver)] + bounded.runs_sanity(self, "netcdf", names)
        if self.driver == "multifile":
            checks.append(sn.assert_found(r"^layout: multifile directories$", self.stdout,
                                          msg="no multifile directory: was the driver used?"))  # fmt: skip
        return sn.all(checks)
