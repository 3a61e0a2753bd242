# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Code written for the original Multifile patch runs unchanged on a patched HDF5:
`src/mpiposix_original.c` selects the driver with H5Pset_fapl_mpiposix, writes one row
per rank into a multifile file, and reads everything back through the same fapl (which
reconstructs the file, as the original did: H5Pset_fapl_mpiposix keeps `read=merge`,
where the driver's default reads in place; the program checks every value). It is built with the patched
HDF5's plain h5pcc (no extra library), on environments with `+variant-multifile`,
on each file-system kind of the partition."""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.filesystems import FileSystemMixin  # noqa: E402
from h5checks.mpi import mpi_sanity  # noqa: E402
from h5checks.nodes import MultiNodeMixin  # noqa: E402


@rfm.simple_test
class multifile_mpiposix_original(FileSystemMixin, MultiNodeMixin, rfm.RegressionTest):
    descr = "a program written for the original patch (H5Pset_fapl_mpiposix), unchanged"
    valid_prog_environs = ["+variant-multifile"]
    tags = {"multifile", "correctness", "compatibility"}
    num_tasks = 4
    time_limit = "5m"
    build_system = "SingleSource"
    sourcepath = "mpiposix_original.c"
    executable = "./mpiposix_original"

    @run_before("run")
    def set_commands(self):
        self.executable_opts = ['"$fsdir/orig.h5"']
        self.prerun_cmds = self.fs_setup_cmds()
        self.postrun_cmds = [
            "status=$?",
            'echo "launcher-status: $status"',
            # the read-only open replaced the head and its directory by the reconstructed file
            'test -f "$fsdir/orig.h5" && ! test -e "$fsdir/orig.h5.h5mf" && echo "reconstructed: file"',
            'h5dump -H "$fsdir/orig.h5" | grep -q "DATASET" && echo "h5dump: ok"',
            'rm -rf "$fsdir"',
            "exit $status",
        ]

    @sanity_function
    def validate(self):
        return sn.all(
            mpi_sanity(self)
            + self.fs_sanity()
            + [
                sn.assert_found(r"^launcher-status: 0$", self.stdout, msg="the program failed"),
                sn.assert_found(
                    rf"^mpiposix: {self.num_tasks} ranks wrote and read back \S+: ok$",
                    self.stdout,
                    msg="the program did not read back what it wrote",
                ),
                sn.assert_found(r"^reconstructed: file$", self.stdout,
                                msg="opening read-only did not reconstruct the file"),
                sn.assert_found(r"^h5dump: ok$", self.stdout, msg="h5dump cannot read the reconstructed file"),
            ]
        )
