# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""h5perf, HDF5's own parallel I/O benchmark (tools/h5perf of HDF5's source), on each
stack and file-system kind of the partition: POSIX, MPI-IO and parallel HDF5 (MPI-IO
driver) write and read the same bytes in one job, and the check records each API's
average write and read throughput and the ratios of parallel HDF5 to MPI-IO and POSIX.

h5perf must be the stack's own, built with its parallel HDF5: a stack whose HDF5 tools
are Debian's serial ones (a local 2.x stack built from a source without tools/, the
crate) has none and is skipped with that reason, and the sanity checks that h5perf
reports the environment's HDF5 version. Files go to the file system under test
(HDF5_PARAPREFIX). References only catch a collapse locally; PLACEHOLDERS on clusters.
"""

import os
import re
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, sanity_function, variable

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.performance import ReferencesMixin, add_spread  # noqa: E402
from h5checks.filesystems import FileSystemMixin  # noqa: E402
from h5checks.nodes import MultiNodeMixin, nodes_sanity  # noqa: E402

#: h5perf's section titles -> performance-variable prefix
APIS = {"POSIX": "posix", "MPIO": "mpiio", "PHDF5 (w/MPI-IO driver)": "phdf5"}
LOCAL = {"ratio_phdf5_mpiio_write": (1.0, -0.95, None)}  # a collapse only: timings swing here
CLUSTER = {"ratio_phdf5_mpiio_write": (0.9, -0.2, None)}  # PLACEHOLDER: calibrate on the system


def _section(api, op):
    """The throughputs of one API and operation in h5perf's report: groups `max`, `avg`
    and `min` over its iterations."""
    return (rf"IO API = {re.escape(api)}\n(?:.*\n)*?"
            rf"\s+{op} \(\d+ iteration\(s\)\):\n\s+Maximum Throughput:\s+(?P<max>[\d.]+) MB/s\n"
            rf"\s+Average Throughput:\s+(?P<avg>[\d.]+) MB/s\n"
            rf"\s+Minimum Throughput:\s+(?P<min>[\d.]+) MB/s")  # fmt: skip


@rfm.simple_test
class h5perf_check(ReferencesMixin, FileSystemMixin, MultiNodeMixin, rfm.RunOnlyRegressionTest):
    valid_prog_environs = ["+hdf5-parallel"]
    tags = {"h5perf", "performance"}
    executable = "h5perf"
    num_tasks = 2
    time_limit = "20m"
    exclusive_access = True
    #: bytes per process per dataset, transfer size and block size (h5perf's -e, -x/-X, -B)
    bytes_per_process = variable(str, value="16M")
    transfer_size = variable(str, value="4M")
    block_size = variable(str, value="1M")
    iterations = variable(int, value=3)
    reference_tables = {"local": LOCAL, "cluster": CLUSTER}

    @run_after("setup")
    def own_h5perf_only(self):
        origin = self.current_environ.extras.get("hdf5_tools_origin", "build")
        self.skip_if(
            origin != "build",
            f"{self.current_environ.name} has no h5perf: its HDF5 source ships no tools/, its HDF5 tools "
            "are Debian's serial ones",
        )

    @run_before("run")
    def set_commands(self):
        self.descr = f"h5perf on {self.fs.get('name')}"
        self.executable_opts = [
            "-A", "posix,mpiio,phdf5", "-C", "-e", self.bytes_per_process, "-x", self.transfer_size,
            "-X", self.transfer_size, "-B", self.block_size, "-i", str(self.iterations),
            "-p", str(self.num_tasks), "-P", str(self.num_tasks),
        ]  # fmt: skip
        if self.fs_alignment:
            self.executable_opts += ["-a", str(self.fs_alignment)]
        self.prerun_cmds = self.fs_setup_cmds() + ['export HDF5_PARAPREFIX="$fsdir"']
        self.postrun_cmds = ["status=$?", 'echo "launcher-status: $status"', 'rm -rf "$fsdir"', "exit $status"]

    @sanity_function
    def validate(self):
        version = self.current_environ.extras.get("hdf5_version")
        checks = self.fs_sanity() + [
            sn.assert_found(r"^launcher-status: 0$", self.stdout, msg="h5perf failed"),
            sn.assert_found(rf"^HDF5 Library: Version {version}$", self.stdout,
                            msg=f"h5perf did not run with the environment's HDF5 {version}"),
            sn.assert_found(rf"^rank 0: Number of processes={self.num_tasks}:{self.num_tasks}$", self.stdout,
                            msg=f"h5perf did not run on {self.num_tasks} processes"),
            sn.assert_not_found(r"must be a multiple", self.stdout, msg="h5perf refused its parameters"),
        ]  # fmt: skip
        for api in APIS:
            for op in ("Write", "Read"):
                checks.append(sn.assert_gt(sn.extractsingle(_section(api, op), self.stdout, "avg", float), 0,
                                           msg=f"h5perf: {api} {op.lower()} at {{0}} MB/s"))  # fmt: skip
        return sn.all(checks + nodes_sanity(self))

    @run_before("performance")
    def set_perf_variables(self):
        self.perf_variables = {}
        for api, name in APIS.items():
            for op in ("Write", "Read"):
                # the average of the iterations, and their spread
                var = f"{name}_{op.lower()}"
                self.perf_variables[var] = sn.make_performance_function(
                    sn.extractsingle(_section(api, op), self.stdout, "avg", float), "MB/s"
                )
                add_spread(self, var, _section(api, op), "MB/s", least="min", most="max")
        write = {name: sn.extractsingle(_section(api, "Write"), self.stdout, "avg", float) for api, name in APIS.items()}
        phdf5, mpiio, posix = write["phdf5"], write["mpiio"], write["posix"]
        self.perf_variables["ratio_phdf5_mpiio_write"] = sn.make_performance_function(phdf5 / mpiio, "ratio")
        self.perf_variables["ratio_phdf5_posix_write"] = sn.make_performance_function(phdf5 / posix, "ratio")
