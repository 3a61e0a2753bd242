# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""File locking on each file system a partition declares, and what HDF5 does with it: a
finding for the site, never a failure (src/locking.c, one process on the job's node).

flock() and fcntl() locks: taken, and excluding another process; HDF5 creating and
reopening a file with its locking as the environment sets it (HDF5_USE_FILE_LOCKING or
the library's default), off, and best effort; then the advice (e.g. "set
HDF5_USE_FILE_LOCKING=BEST_EFFORT for this file system"). Each finding is a performance
variable of 1 (yes) or 0 (no), so the report keeps it per system and file system; the
sanity asks only that every finding was made. Locks that exclude within one node may
still not exclude across nodes (NFS without lockd, some FUSE clients): a finding on one
node says nothing about that.
"""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import fixture, performance_function, run_before, sanity_function

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.builds import SingleSourceBuild  # noqa: E402
from h5checks.filesystems import FileSystemMixin  # noqa: E402

FINDINGS = ["flock", "flock-excludes", "fcntl", "fcntl-excludes", "hdf5-as-set", "hdf5-off", "hdf5-best-effort"]


class locking_build(SingleSourceBuild):
    """src/locking.c with the environment's C compiler (h5pcc)."""

    sourcepath = "locking.c"
    executable = "locking"


@rfm.simple_test
class filesystem_locking(FileSystemMixin, rfm.RunOnlyRegressionTest):
    valid_prog_environs = ["+hdf5-parallel"]
    tags = {"filesystem", "hdf5"}
    num_tasks = 1
    time_limit = "5m"

    program = fixture(locking_build, scope="environment")

    @run_before("run")
    def set_commands(self):
        self.job.launcher = getlauncher("local")()  # not an MPI program; runs on the job's node
        self.descr = f"file locking on {self.fs.get('name')!r} at {self.fs.get('path')}"
        self.executable = os.path.join(self.program.stagedir, "locking")
        self.executable_opts = ['"$fsdir"']
        self.prerun_cmds = self.fs_setup_cmds()
        self.postrun_cmds = ['rm -rf "$fsdir"']

    @sanity_function
    def validate(self):
        return sn.all(
            self.fs_sanity()
            + [sn.assert_found(rf"^{f}: (yes|no)", self.stdout, msg=f"no finding {f!r}") for f in FINDINGS]
            + [sn.assert_found(r"^advice: ", self.stdout, msg="no advice")]
        )

    @performance_function("")
    def finding(self, name="flock"):
        return sn.extractsingle(rf"^{name}: (yes|no)", self.stdout, 1, lambda v: 1 if v == "yes" else 0)

    @run_before("performance")
    def set_perf_variables(self):
        self.perf_variables = {f.replace("-", "_"): self.finding(f) for f in FINDINGS}
