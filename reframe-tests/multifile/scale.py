# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""How the multifile index operations grow with the number of records: `h5mf-bench
--records` (packages/hdf5-vfd-multifile/bench/mf_scale.c) writes a dataset as N records
of 8 bytes that no coalescing can join, for each N of `records`, then times loading the
directory (`info`), reconstructing it by one process and by all ranks, and opening it
in place, with the peak memory each adds.

Performance variables, per operation: the exponent k of time ~ N^k fitted over the
counts of at least 10^4 records (unit "exponent"), the seconds at each count
(`seconds_<op>_at_<N>`: the curve the report plots) and the peak bytes per record at
the largest count. References bound the exponents only (times are for the
curve in the report): an index whose cost grows like N^2 fails everywhere. Runs on 1, 2
and 4 ranks, oversubscribed where the partition has fewer CPUs (the timed operations
are each process's own work; the ranks meet only at barriers between them).
"""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, run_before, sanity_function, variable

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.filesystems import FileSystemMixin  # noqa: E402
from h5checks.mpi import mpi_sanity  # noqa: E402
from h5checks.nodes import MultiNodeMixin  # noqa: E402

OPERATIONS = ["info", "merge-serial", "merge-parallel", "inplace-open"]
#: exponent: close to 1 for an O(n log n) index; 2 is the quadratic cost it must never have
EXPONENT = (1.0, None, 0.5, "exponent")


@sn.deferrable
def _not_coalesced(found, counts):
    """Every count was written as at least that many records."""
    return all(f >= int(c) for f, c in zip(found, counts))


@rfm.simple_test
class multifile_scale(FileSystemMixin, MultiNodeMixin, rfm.RunOnlyRegressionTest):
    valid_prog_environs = ["+hdf5-vfd-multifile"]
    tags = {"multifile", "performance", "scale"}
    time_limit = "20m"
    ranks = parameter([1, 2, 4])
    #: the record counts of the curve (the full curve in the package README goes to 10^7)
    records = variable(str, value="10000,100000,1000000")
    executable = "h5mf-bench"
    reference = {
        "*": {f"exponent_{op.replace('-', '_')}": EXPONENT for op in OPERATIONS},
    }

    @run_before("run")
    def set_commands(self):
        self.num_tasks = self.ranks
        self.descr = f"multifile index scale on {self.ranks} ranks, records {self.records}"
        self.executable_opts = ['"$fsdir"', "--records", self.records, "--json", "scale.json"]
        self.prerun_cmds = self.fs_setup_cmds()
        self.postrun_cmds = ["status=$?", 'echo "launcher-status: $status"', 'rm -rf "$fsdir"', "exit $status"]
        self.keep_files = ["scale.json"]

    @sanity_function
    def validate(self):
        counts = self.records.split(",")
        return sn.all(
            self.fs_sanity()
            + [
                sn.assert_found(r"^launcher-status: 0$", self.stdout, msg="h5mf-bench failed"),
                sn.assert_eq(sn.count(sn.extractall(r"^scale info count=\d+ records=(\d+)", self.stdout, 1)), len(counts),
                             msg="expected a measurement per record count, got {0}"),
                sn.assert_true(_not_coalesced(sn.extractall(r"^scale info count=\d+ records=(\d+)", self.stdout, 1, int), counts),
                               msg="fewer records than written: the workload no longer forces one per write"),
            ]
            + mpi_sanity(self)
        )  # fmt: skip

    @run_before("performance")
    def set_perf_variables(self):
        self.perf_variables = {}
        for op in OPERATIONS:
            var = op.replace("-", "_")
            self.perf_variables[f"exponent_{var}"] = sn.make_performance_function(
                sn.extractsingle(rf"^fit {op} exponent=([\d.]+)", self.stdout, 1, float), "exponent"
            )
            for count in self.records.split(","):  # the curve: one variable per count
                line = rf"^scale {op} count={count} records=\d+ seconds=([\d.]+)"
                self.perf_variables[f"seconds_{var}_at_{count}"] = sn.make_performance_function(
                    sn.extractsingle(line, self.stdout, 1, float), "s"
                )
            line = rf"^scale {op} count=\d+ records=\d+ seconds=[\d.]+ peak_bytes_per_record=([\d.]+)"
            self.perf_variables[f"bytes_per_record_{var}"] = sn.make_performance_function(
                sn.extractsingle(line, self.stdout, 1, float, -1), "B/record"
            )
