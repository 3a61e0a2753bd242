# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""multifile performance against the limits measured in the same job: `h5mf-bench`
(packages/hdf5-vfd-multifile/bench) on each file-system kind of the partition and on
2 and 4 ranks. Every kernel moves the same bytes; the performance variables are each
kernel's median bandwidth (MiB/s) and the ratios the benchmark prints (multifile
against raw file-per-process POSIX writes, MPI-IO and HDF5's MPI-IO and subfiling
drivers on one shared file; reconstruction against a copy of the same bytes by
copy_file_range and by cp(1), parallel against serial reconstruction; in-place reads
against reads of the merged file). With `fsync` every kernel's output is on stable
storage before its clock stops.

A variant with more ranks than the partition's CPUs (processor.num_cpus) is skipped,
saying so: oversubscribed MPI ranks busy-wait and the MPI kernels collapse (seen here:
MPICH, 4 ranks on 2 cores, hdf5-mpio at 67 MiB/s against 3000 on 2 ranks).

References: ratios, not absolute figures (those only compare within one run). On
`generic` and `slurm-local` (2 shared cores, page cache, timings that swing by ±100%)
the bounds only catch a collapse; on the cluster templates they are PLACEHOLDERS for
the site to calibrate (run, read the perflogs, set value and tolerance).
"""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.performance import ReferencesMixin, add_spread  # noqa: E402
from h5checks.filesystems import FileSystemMixin  # noqa: E402
from h5checks.mpi import mpi_sanity  # noqa: E402
from h5checks.nodes import MultiNodeMixin  # noqa: E402

KERNELS = [
    "posix-fpp", "mpiio-coll", "mpiio-ind", "hdf5-mpio", "hdf5-subfiling", "hdf5-multifile",
    "hdf5-multifile-plugin", "hdf5-mpio-seloff", "hdf5-multifile-seloff", "merge-serial", "copy-serial", "cp",
    "merge-parallel", "copy-parallel", "read-merged", "read-inplace", "session-read-mpio", "session-read-multifile",
]  # fmt: skip
#: ratio name in h5mf-bench's output -> performance variable
RATIOS = {
    "multifile/posix-fpp (write limit)": "ratio_multifile_posix_fpp",
    "multifile/mpiio-coll": "ratio_multifile_mpiio_coll",
    "multifile/hdf5-mpio": "ratio_multifile_hdf5_mpio",
    "multifile/hdf5-subfiling": "ratio_multifile_hdf5_subfiling",
    "multifile plugin/linked": "ratio_plugin_linked",
    "multifile selection-off/on": "ratio_multifile_selection_off_on",
    "multifile/hdf5-mpio (selection off)": "ratio_multifile_hdf5_mpio_selection_off",
    "merge-serial/copy-serial": "ratio_merge_copy_serial",
    "merge-serial/cp": "ratio_merge_cp",
    "merge-parallel/merge-serial": "ratio_merge_parallel_serial",
    "merge-parallel/copy-parallel": "ratio_merge_copy_parallel",
    "read-inplace/read-merged": "ratio_read_inplace_merged",
    "multifile/hdf5-mpio (collective reads in the session)": "ratio_session_read_multifile_mpio",
}
#: local machines: only a collapse fails (value, lower, upper as fractions)
LOCAL = {
    "ratio_multifile_posix_fpp": (0.8, -0.8, None),
    "ratio_multifile_hdf5_mpio": (1.5, -0.9, None),
    "ratio_merge_copy_serial": (1.0, -0.9, None),
}
#: PLACEHOLDERS for the cluster templates: calibrate on the system (see the docstring)
CLUSTER = {
    "ratio_multifile_posix_fpp": (0.9, -0.2, None),
    "ratio_multifile_hdf5_mpio": (1.0, -0.3, None),
    "ratio_merge_copy_serial": (0.8, -0.3, None),
}


@rfm.simple_test
class multifile_bench(ReferencesMixin, FileSystemMixin, MultiNodeMixin, rfm.RunOnlyRegressionTest):
    valid_prog_environs = ["+hdf5-vfd-multifile"]  # h5mf-bench's linked kernel needs the package
    tags = {"multifile", "performance"}
    time_limit = "20m"
    ranks = parameter([2, 4])
    #: MiB each rank writes per kernel and repetition, and repetitions (median reported)
    mib_per_rank = variable(int, value=16)
    repeat = variable(int, value=3)
    executable = "h5mf-bench"
    #: the node to itself (sbatch --exclusive): a job beside it on the same cores makes
    #: MPI ranks busy-wait (seen on slurm-local: ratios fell to 0.05)
    exclusive_access = True
    reference_tables = {"local": LOCAL, "cluster": CLUSTER}

    @run_after("setup")
    def skip_oversubscribed(self):
        cpus = self.current_partition.processor.num_cpus
        self.skip_if(
            bool(cpus) and self.ranks > cpus,
            f"{self.ranks} ranks on {cpus} CPUs: oversubscribed MPI ranks busy-wait, and every kernel "
            "with MPI would measure that",
        )

    @run_before("run")
    def set_commands(self):
        self.num_tasks = self.ranks
        self.descr = f"h5mf-bench on {self.ranks} ranks x {self.mib_per_rank} MiB, {self.fs.get('name')}"
        self.executable_opts = [
            '"$fsdir"', "--mib-per-rank", str(self.mib_per_rank), "--repeat", str(self.repeat),
            "--json", "h5mf-bench.json",
        ]  # fmt: skip
        self.prerun_cmds = self.fs_setup_cmds()
        self.postrun_cmds = ["status=$?", 'echo "launcher-status: $status"', 'rm -rf "$fsdir"', "exit $status"]
        self.keep_files = ["h5mf-bench.json"]

    @sanity_function
    def validate(self):
        # h5mf-bench prints its ranks and the MPI library in its header
        return sn.all(
            self.fs_sanity()
            + [
                sn.assert_found(r"^launcher-status: 0$", self.stdout, msg="h5mf-bench failed"),
                sn.assert_found(rf"^h5mf-bench: {self.ranks} ranks x ", self.stdout,
                                msg=f"h5mf-bench did not run on {self.ranks} ranks"),
                sn.assert_eq(sn.count(sn.extractall(r"^(\S+)\s+[\d.]+\s+[\d.]+\s+[\d.]+$", self.stdout, 1)),
                             len(KERNELS), msg="expected a line per kernel, got {0}"),
            ]
            + mpi_sanity(self)
        )

    @run_before("performance")
    def set_perf_variables(self):
        # each kernel's median, and the least and the most of its runs (`_min`, `_max`:
        # the spread the report draws and judges "within noise" by)
        self.perf_variables = {}
        for kernel in KERNELS:
            line = rf"^{kernel}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$"  # median, least, most
            var = kernel.replace("-", "_")
            self.perf_variables[var] = sn.make_performance_function(
                sn.extractsingle(line, self.stdout, 1, float), "MiB/s"
            )
            add_spread(self, var, line, "MiB/s", least=2, most=3)
        for text, name in RATIOS.items():
            pattern = r"^ratio " + text.replace("(", r"\(").replace(")", r"\)").replace("/", "/") + r"\s+([\d.]+)"
            self.perf_variables[name] = sn.make_performance_function(
                sn.extractsingle(pattern, self.stdout, 1, float), "ratio"
            )
