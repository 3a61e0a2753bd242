# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""File-system pre-flight: each file system that a partition's site config declares is
mounted where it says, with the type (and mount options) it says, and writable, with
its tuning applied (Lustre striping shown by `lfs getstripe`). Runs before I/O results
mean anything; one variant per file-system kind (see ../lib/h5checks/filesystems.py)."""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_before, sanity_function

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.filesystems import FileSystemMixin  # noqa: E402


@rfm.simple_test
class filesystem_preflight(FileSystemMixin, rfm.RunOnlyRegressionTest):
    valid_prog_environs = ["builtin"]
    tags = {"filesystem", "preflight"}
    num_tasks = 1
    time_limit = "2m"
    executable = "df"

    @run_before("run")
    def set_commands(self):
        self.job.launcher = getlauncher("local")()  # not an MPI program; runs on the job's node
        self.descr = f"file system {self.fs.get('name')!r} at {self.fs.get('path')}"
        self.executable_opts = ["-P", '"$fsdir"']
        self.prerun_cmds = self.fs_setup_cmds() + [
            'echo probe > "$fsdir/.probe" && test "$(cat "$fsdir/.probe")" = probe && echo "writable: yes"'
        ]
        self.postrun_cmds = ['rm -rf "$fsdir"']

    @sanity_function
    def validate(self):
        return sn.all(
            self.fs_sanity()
            + [
                sn.assert_found(r"^writable: yes$", self.stdout, msg=f"cannot write in {self.fs_dir}"),
                sn.assert_found(r"^Filesystem\s+\d+-blocks", self.stdout, msg="df did not describe the mount"),
            ]
        )
