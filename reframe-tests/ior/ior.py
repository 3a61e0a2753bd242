# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""IOR (github.com/hpc/ior) on each stack and file-system kind of the partition, in the
style of the CSCS IOR checks: one write check per API and file system, and a read check
that depends on its write variant and reads the same files back (`-R`: IOR checks every
byte it reads). Each runs IOR's iterations (`-i`, `iterations`, default 3); the figure is
IOR's Mean(MiB) of them, with its Min(MiB) and Max(MiB) as the spread (`<var>_min`,
`<var>_max`). File per process and shared file side by side:

  posix-fpp         -a POSIX -F            one file per rank
  mpiio-shared      -a MPIIO               one shared file, independent I/O
  mpiio-collective  -a MPIIO -c            one shared file, collective I/O
  hdf5              -a HDF5 -c             one shared HDF5 file (IOR sets HDF5's MPI-IO driver)
  hdf5-multifile    -a HDF5 -c, HDF5_DRIVER=multifile and the package's LD_PRELOAD shim
                    (libh5mf_preload.so: IOR calls H5Pset_fapl_mpio itself), so the file
                    is a multifile file (a head beside its directory); the read reads it
                    in place (the driver's default), leaving it as it was

IOR must be built against the environment's HDF5 and MPI. It is found, per environment,
in extras['ior'] (the site config; Spack views that contain `ior` set it), else through
H5STACK_IOR, a path with `{stack}` for the environment's stack name (e.g.
H5STACK_IOR=$HOME/ior/{stack}/bin/ior). Where none exists the checks are skipped with
that reason. Performance variables: the Mean(MiB) of IOR's summary rows, in MiB/s; references
only on the cluster templates (PLACEHOLDERS to calibrate), none locally (recorded only).
"""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.udeps as udeps
from reframe.core.builtins import parameter, performance_function, run_after, run_before, sanity_function, variable

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.filesystems import FileSystemMixin  # noqa: E402
from h5checks.nodes import MultiNodeMixin, nodes_sanity  # noqa: E402
from h5checks.performance import ReferencesMixin, add_spread  # noqa: E402

#: variant -> (IOR options, file name in $fsdir)
APIS = {
    "posix-fpp": (["-a", "POSIX", "-F"], "ior.posix"),
    "mpiio-shared": (["-a", "MPIIO"], "ior.mpiio"),
    "mpiio-collective": (["-a", "MPIIO", "-c"], "ior.mpiio"),
    "hdf5": (["-a", "HDF5", "-c"], "ior.h5"),
    "hdf5-multifile": (["-a", "HDF5", "-c"], "ior.h5"),
}
#: PLACEHOLDER (MiB/s, lower bound -50%) for the cluster templates: calibrate on the system;
#: none on this machine's systems, whose absolute rates say nothing
CLUSTER_BW = (1000, -0.5, None)


def summary_row(op, api):
    """IOR 4's "Summary of all tests" row of an operation: groups 1-3 are Max(MiB),
    Min(MiB) and Mean(MiB) of the iterations; the API near the end."""
    return rf"^{op}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+\s.*\s{api}\s+\d+\s*$"


def ior_of(environ):
    """The ior program for this environment, or None."""
    path = environ.extras.get("ior")
    if not path and os.environ.get("H5STACK_IOR"):
        path = os.environ["H5STACK_IOR"].replace("{stack}", environ.extras.get("stack", environ.name))
    return path or None


class IorBase(FileSystemMixin, MultiNodeMixin, rfm.RunOnlyRegressionTest):
    valid_prog_environs = ["+hdf5-parallel"]
    tags = {"ior", "performance"}
    num_tasks = 2
    time_limit = "20m"
    exclusive_access = True
    api = parameter(list(APIS))
    #: IOR's -b (bytes per rank) and -t (transfer size)
    block_size = variable(str, value="64m")
    transfer_size = variable(str, value="4m")
    #: IOR's -i: the figure is the mean of these runs, their least and most its spread
    iterations = variable(int, value=3)
    ior = variable(str, value="")
    #: IOR's -G: the time-stamp signature in the data, the same for write and read so
    #: that the read (-R) can check every byte
    signature = variable(int, value=20110914)

    @run_after("setup")
    def find_ior(self):
        found = ior_of(self.current_environ)
        self.skip_if(
            not found or (not self.is_dry_run() and not os.path.isfile(found)),
            f"no ior for {self.current_environ.name}"
            + (f" ({found} does not exist)" if found else "")
            + ": set extras['ior'] in the site config or H5STACK_IOR=<path with {stack}> (reframe-tests/ior/README.md)",
        )
        self.ior = found
        if self.api == "hdf5-multifile":
            prefix = self.current_environ.extras.get("multifile_prefix")
            self.skip_if(not prefix, f"{self.current_environ.name} has no hdf5-vfd-multifile package (its LD_PRELOAD "
                                     "shim makes IOR's H5Pset_fapl_mpio multifile)")  # fmt: skip

    def ior_command(self, *what):
        opts, name = APIS[self.api]
        self.executable = self.ior
        self.executable_opts = [*opts, *what, "-k", "-i", str(self.iterations), "-b", self.block_size, "-t", self.transfer_size,
                                "-G", str(self.signature), "-o", f'"$fsdir/{name}"']  # fmt: skip
        if self.api == "hdf5-multifile":
            prefix = self.current_environ.extras["multifile_prefix"]
            self.executable = "env"
            self.executable_opts = [f"LD_PRELOAD={prefix}/lib/libh5mf_preload.so", "HDF5_DRIVER=multifile",
                                    self.ior, *self.executable_opts]  # fmt: skip

    def ior_sanity(self, op):
        return self.fs_sanity() + nodes_sanity(self) + [
            sn.assert_found(r"^launcher-status: 0$", self.stdout, msg="ior failed"),
            sn.assert_found(summary_row(op.lower(), APIS[self.api][0][1]), self.stdout,
                            msg=f"no {op.lower()} row of API {APIS[self.api][0][1]} in ior's summary"),
            sn.assert_found(rf"^tasks\s+: {self.num_tasks}$|^tasks\s+:\s+{self.num_tasks}\s*$", self.stdout,
                            msg=f"ior did not run {self.num_tasks} tasks"),
        ]  # fmt: skip


@rfm.simple_test
class ior_write(ReferencesMixin, IorBase):
    reference_tables = {"cluster": {"write_bw": CLUSTER_BW}}
    reference_unit = "MiB/s"

    @run_before("run")
    def set_commands(self):
        self.descr = f"IOR write, {self.api}, on {self.fs.get('name')}"
        self.ior_command("-w")
        name = APIS[self.api][1]
        self.prerun_cmds = self.fs_setup_cmds()
        self.postrun_cmds = [
            "status=$?", 'echo "launcher-status: $status"',
            f'if h5mf info "$fsdir/{name}" >/dev/null 2>&1; then echo "written: multifile"; ls "$fsdir"; '
            f'elif [ -f "$fsdir/{name}" ] || ls "$fsdir/{name}".* >/dev/null 2>&1; then echo "written: file"; fi',
            "exit $status",
        ]  # fmt: skip

    @sanity_function
    def validate(self):
        # hdf5-multifile must really have written a multifile file (the shim took effect)
        kind = "multifile" if self.api == "hdf5-multifile" else "file"
        return sn.all(self.ior_sanity("Write") + [
            sn.assert_found(rf"^written: {kind}$", self.stdout, msg=f"ior did not leave a {kind} behind"),
        ])  # fmt: skip

    @performance_function("MiB/s")
    def write_bw(self):
        return sn.extractsingle(summary_row("write", APIS[self.api][0][1]), self.stdout, 3, float)

    @run_before("performance")
    def add_spreads(self):
        """`write_bw_min`, `write_bw_max`: IOR's Min(MiB) and Max(MiB) of the iterations."""
        add_spread(self, "write_bw", summary_row("write", APIS[self.api][0][1]), "MiB/s", least=2, most=1)


@rfm.simple_test
class ior_read(ReferencesMixin, IorBase):
    reference_tables = {"cluster": {"read_bw": CLUSTER_BW}}
    reference_unit = "MiB/s"

    @run_after("init")
    def depend_on_write(self):
        self.depends_on(self._write_name(), udeps.by_env)

    def _write_name(self):
        return ior_write.variant_name(ior_write.get_variant_nums(fs_kind=self.fs_kind, api=self.api)[0])

    @run_after("setup")
    def use_the_written_files(self):
        self.fs_dir = self.getdep(self._write_name()).fs_dir

    @run_before("run")
    def set_commands(self):
        self.descr = f"IOR read (checked), {self.api}, on {self.fs.get('name')}"
        self.ior_command("-r", "-R")
        name = APIS[self.api][1]
        self.prerun_cmds = self.fs_setup_cmds(create=False)
        self.postrun_cmds = [
            "status=$?", 'echo "launcher-status: $status"',
            f'h5mf info "$fsdir/{name}" > /dev/null 2>&1 && echo "after read: multifile file"',
            'rm -rf "$fsdir"', "exit $status",
        ]  # fmt: skip

    @sanity_function
    def validate(self):
        checks = self.ior_sanity("Read") + [
            sn.assert_not_found(r"WARNING: incorrect data|[1-9]\d* errors? found", self.stdout,
                                msg="ior found wrong bytes in what it read"),
        ]  # fmt: skip
        if self.api == "hdf5-multifile":  # the driver reads the file in place: reading changes nothing
            checks.append(sn.assert_found(r"^after read: multifile file$", self.stdout,
                                          msg="the read changed the multifile file"))
        return sn.all(checks)

    @performance_function("MiB/s")
    def read_bw(self):
        return sn.extractsingle(summary_row("read", APIS[self.api][0][1]), self.stdout, 3, float)

    @run_before("performance")
    def add_spreads(self):
        """`read_bw_min`, `read_bw_max`: IOR's Min(MiB) and Max(MiB) of the iterations."""
        add_spread(self, "read_bw", summary_row("read", APIS[self.api][0][1]), "MiB/s", least=2, most=1)
