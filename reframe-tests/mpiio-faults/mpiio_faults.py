# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Faults of the site's MPI-IO itself, before its users meet them: src/mpiio_faults.c,
built with the environment's h5pcc, on 4 ranks, each pattern several times (a fault may
show in some runs only), on each file-system kind of the partition (FileSystemMixin).

- mpiio_faults %probe=lost-writes: "does this MPI-IO lose disjoint independent writes?"
  4096 bytes written in phases, every byte by one rank drawn at random, in independent
  noncontiguous writes ordered between phases as MPI-IO's semantics ask; once through
  MPI-IO (MPI_File_write_at through a file view), once through HDF5's MPI-IO driver (a
  16x16x16 uint8 chunk, H5Dwrite of points, H5Fflush and MPI_Barrier). A byte that does
  not hold its last value fails the check.
- mpiio_faults %probe=never-written: "does it write process memory into files?" Pieces
  of 8 bytes every 16 bytes written beyond the end of the file, collectively and
  independently: the gaps must read as zeros. Varying bytes there (process memory) fail
  the check; one constant byte value (ROMIO's 0xff) is reported, not failed: undefined
  bytes, no memory.
- mpiio_faults %probe=unread-tail: "does a collective read return what the file holds?"
  Each rank reads a range of a 16 KiB file in one collective read, the last rank a short
  range that starts after every other rank's start; once through MPI-IO
  (MPI_File_read_at_all), once through HDF5's MPI-IO driver (a collective H5Dread of a
  hyperslab). A byte that is not the file's fails the check (Open MPI 4.1.0-4.1.4's OMPIO,
  open-mpi/ompi#10546: its read data sieving ends at the range that starts last, and
  the status still counts every byte).

A fault the site knows and accepts is named in the environment's
`extras['mpiio_known_faults']` ({probe: reason}): when it shows, the test is an expected
failure (xfail) instead of a failure; when it does not, it passes.
`-S mpiio_faults.inject=lost-writes,never-written,unread-tail` makes the program show the faults on
purpose (the check's own test).
"""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, run_after, run_before, sanity_function, variable

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.builds import SingleSourceBuild  # noqa: E402
from h5checks.faults import known_and_shown, known_fault_cmds  # noqa: E402
from h5checks.filesystems import FileSystemMixin  # noqa: E402
from h5checks.mpi import launch_command, mpi_sanity  # noqa: E402
from h5checks.nodes import MultiNodeMixin  # noqa: E402

#: the two runs of the program per probe: the file it writes in $fsdir, and its options
RUNS = {
    "lost-writes": [("data.bin", "--api", "mpiio"), ("data.h5", "--api", "hdf5")],
    "never-written": [("data.bin", "--transfer", "collective"), ("data.bin", "--transfer", "independent")],
    "unread-tail": [("data.bin", "--api", "mpiio"), ("data.h5", "--api", "hdf5")],
}


class mpiio_faults_build(SingleSourceBuild):
    """src/mpiio_faults.c with the environment's C compiler (h5pcc)."""

    sourcepath = "mpiio_faults.c"
    executable = "mpiio_faults"


@rfm.xfail(
    "a known fault of this MPI-IO (the environment's extras['mpiio_known_faults'] names it)",
    lambda test: known_and_shown(test, "mpiio_known_faults"),
)
@rfm.simple_test
class mpiio_faults(FileSystemMixin, MultiNodeMixin, rfm.RunOnlyRegressionTest):
    probe = parameter(list(RUNS))
    valid_prog_environs = ["+hdf5-parallel"]
    tags = {"mpiio", "correctness"}
    num_tasks = 4
    time_limit = "10m"

    #: runs of each pattern in one program run
    runs = variable(int, value=5)
    #: probes whose fault the program shows on purpose (MPIIO_FAULTS_TEST_INJECT): the check's own test
    inject = variable(str, value="")

    program = fixture(mpiio_faults_build, scope="environment")

    @run_after("setup")
    def describe(self):
        self.descr = f"MPI-IO faults: {self.probe}, {self.runs} runs on {self.num_tasks} ranks on {self.fs.get('name')}"

    @run_before("run")
    def set_commands(self):
        program = os.path.join(self.program.stagedir, "mpiio_faults")
        (first, *first_opts), (second, *second_opts) = RUNS[self.probe]
        if self.inject:
            self.env_vars["MPIIO_FAULTS_TEST_INJECT"] = self.inject
        self.executable = program
        self.executable_opts = [self.probe, f'"$fsdir/{second}"', "--runs", str(self.runs), *second_opts]
        self.prerun_cmds = self.fs_setup_cmds() + [
            *known_fault_cmds(self, "mpiio_known_faults"),
            launch_command(self, program, self.probe, f'"$fsdir/{first}"', "--runs", str(self.runs), *first_opts),
            'echo "first-status: $?"',
        ]
        self.postrun_cmds = ["status=$?", 'echo "launcher-status: $status"', 'rm -rf "$fsdir"', "exit $status"]

    def basic_sanity(self):
        """Both programs ran on every rank with the environment's MPI, on the configured file system."""
        verdicts = sn.count(sn.findall(rf"^{self.probe}: verdict: ", self.stdout))
        return (
            mpi_sanity(self, expected_lines=2)
            + self.fs_sanity()
            + [
                sn.assert_found(r"^first-status: 0$", self.stdout, msg="the first run of the program failed"),
                sn.assert_found(r"^launcher-status: 0$", self.stdout, msg="the second run of the program failed"),
                sn.assert_eq(verdicts, 2, msg=f"expected a {self.probe} verdict from both runs, got {{0}}"),
            ]
        )

    @sanity_function
    def validate(self):
        faults = sn.extractall(rf"^{self.probe}: verdict: (FAULT: .*)$", self.stdout, 1)
        return sn.all(
            self.basic_sanity() + [sn.assert_eq(faults, [], msg=f"this MPI-IO shows the fault ({self.probe}): {{0}}")]
        )
