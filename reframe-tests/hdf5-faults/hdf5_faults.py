# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Faults of parallel HDF5 itself (with its MPI-IO driver), before a site's users meet
them: src/hdf5_faults.c, built with the environment's h5pcc, on 3 ranks, on each
file-system kind of the partition (FileSystemMixin); one probe per fault class (README.md).

- hdf5_faults %probe=coll-md-cache: "does a collective operation fail when independent
  reads left the ranks' metadata caches different?" A control run (every rank reads the
  same) must pass; then the probe's run: its verdict decides.
- hdf5_faults %probe=contig-fill: "does the fill of a new contiguous dataset race other
  ranks' earlier writes to a deleted dataset in its space?" The control run orders the
  writes before the delete (a barrier) and must pass; then the probe's run.
- hdf5_faults %probe=scaleoffset-int: "does a chunked int8 dataset with lossless integer
  scaleoffset whose chunks span the whole range read back?" The control (int32, the same
  values) must pass.
- hdf5_faults %probe=nbit-after-deflate: "does a chunked uint8 dataset filtered by deflate,
  then nbit, whose chunks deflate cannot shrink read back?" The control (nbit, then
  deflate) must pass.
- hdf5_faults %probe=filtered-empty-read: "does a collective read of a deflated dataset
  that holds no chunk yet return its fill value?" The control reads independently.
- hdf5_faults %probe=close-order: "does H5Fclose return, with collective metadata
  operations, after the ranks closed their groups and datasets in different orders?" The
  control closes them in one order on every rank.
- hdf5_faults %probe=shrink-filtered: "does H5Dset_extent shrink a deflated chunked
  dataset when the ranks get there at different times?" The control orders the ranks'
  closes of the dataset after every rank's shrink (a barrier).

Each probe's steps are bounded (TIMEOUTS, else the program's 60 s): a hang is a FAULT
verdict after that, so a hanging probe costs its bound per environment and file-system
kind, not the check's time limit.

A fault the site knows and accepts is named in the environment's
`extras['hdf5_known_faults']` ({probe: reason}; the local stacks take it from
stacks.yaml, per HDF5 series): when it shows, the test is an expected failure (xfail);
when it does not, it passes. `-S hdf5_faults.accept_known=no` judges a known fault as any
other (the check's own test: it must fail where the fault shows).
"""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, parameter, run_after, run_before, sanity_function, variable

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.builds import SingleSourceBuild  # noqa: E402
from h5checks.faults import known_and_shown, known_fault_cmds  # noqa: E402
from h5checks.filesystems import FileSystemMixin  # noqa: E402
from h5checks.mpi import launch_command, mpi_sanity  # noqa: E402
from h5checks.nodes import MultiNodeMixin  # noqa: E402

PROBES = [
    "coll-md-cache",
    "contig-fill",
    "scaleoffset-int",
    "nbit-after-deflate",
    "filtered-empty-read",
    "close-order",
    "shrink-filtered",
]
#: the longest a step may take (the program's --timeout), in seconds, where not its 60
TIMEOUTS = {
    "scaleoffset-int": 20,
    "nbit-after-deflate": 20,
    "filtered-empty-read": 20,
    "close-order": 20,
    "shrink-filtered": 20,
}


class hdf5_faults_build(SingleSourceBuild):
    """src/hdf5_faults.c with the environment's C compiler (h5pcc)."""

    sourcepath = "hdf5_faults.c"
    executable = "hdf5_faults"


@rfm.xfail(
    "a known fault of this HDF5 (the environment's extras['hdf5_known_faults'] names it)",
    lambda test: known_and_shown(test, "hdf5_known_faults"),
)
@rfm.simple_test
class hdf5_faults(FileSystemMixin, MultiNodeMixin, rfm.RunOnlyRegressionTest):
    probe = parameter(PROBES)
    valid_prog_environs = ["+hdf5-parallel"]
    tags = {"hdf5", "correctness"}
    num_tasks = 3
    time_limit = "10m"

    #: a fault the environment names as known is an expected failure (no: a failure)
    accept_known = variable(typ.Bool, value=True)

    program = fixture(hdf5_faults_build, scope="environment")

    @run_after("setup")
    def describe(self):
        self.descr = f"HDF5 faults: {self.probe} on {self.num_tasks} ranks on {self.fs.get('name')}"

    @run_before("run")
    def set_commands(self):
        program = os.path.join(self.program.stagedir, "hdf5_faults")
        if type(self.job.launcher).registered_name == "srun":  # a hang's verdict ends rank 0: the job with it
            self.job.launcher.options += ["--kill-on-bad-exit=1"]
        bound = ["--timeout", str(TIMEOUTS[self.probe])] if self.probe in TIMEOUTS else []
        self.executable = program
        self.executable_opts = [self.probe, '"$fsdir/probe.h5"', *bound]
        self.prerun_cmds = self.fs_setup_cmds() + [
            *known_fault_cmds(self, "hdf5_known_faults"),
            launch_command(self, program, self.probe, '"$fsdir/control.h5"', "--control", *bound),
            'echo "control-status: $?"',
        ]
        # a fault ends the probe's job (MPI_Abort): its status is judged with its verdict
        self.postrun_cmds = ['echo "launcher-status: $?"', 'rm -rf "$fsdir"']

    def basic_sanity(self):
        """Both runs started on every rank with the environment's MPI, on the configured file
        system; the control passed; the probe gave a verdict, and exit 0 with OK."""
        verdicts = sn.extractall(rf"^{self.probe}: verdict: (OK|FAULT): ", self.stdout, 1)
        return (
            mpi_sanity(self, expected_lines=2)
            + self.fs_sanity()
            + [
                sn.assert_found(r"^control-status: 0$", self.stdout, msg="the control run failed"),
                sn.assert_eq(sn.count(verdicts), 2, msg=f"expected a {self.probe} verdict from both runs, got {{0}}"),
                sn.assert_eq(sn.getitem(verdicts, 0), "OK", msg="the control run did not pass"),
                sn.assert_true(
                    sn.or_(
                        sn.getitem(verdicts, 1) == "FAULT", sn.len(sn.findall(r"^launcher-status: 0$", self.stdout))
                    ),
                    msg="the probe's run said OK but exited non-zero",
                ),
            ]
        )

    @sanity_function
    def validate(self):
        faults = sn.extractall(rf"^{self.probe}: verdict: (FAULT: .*)$", self.stdout, 1)
        return sn.all(
            self.basic_sanity() + [sn.assert_eq(faults, [], msg=f"this HDF5 shows the fault ({self.probe}): {{0}}")]
        )
