# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Parallel h5py with the drivers, as users write it: python/examples/workload.py (groups,
attributes, contiguous, chunked, compressed and growing datasets) on 4 ranks through
HDF5's MPI-IO driver and through multifile (`driver="multifile"`, package h5vfd); the
directory merged with `h5vfd.merge`, equal to the MPI-IO file (h5diff silent, and byte
for byte), and every value read back serially.

Runs on every environment with parallel h5py (feature `h5py`: the local stacks and the
Spack views that hold h5py and h5vfd) and a multifile driver, with the environment's
Python (extras `python`, else python3).
"""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.mpi import reference_and_run_sanity  # noqa: E402
from h5checks.nodes import MultiNodeMixin  # noqa: E402

WORKLOAD = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "python", "examples", "workload.py"))


@rfm.simple_test
class h5py_workload(MultiNodeMixin, rfm.RunOnlyRegressionTest):
    descr = "parallel h5py: the workload through MPI-IO and multifile (h5vfd), merged and compared"
    valid_systems = ["*"]
    valid_prog_environs = ["+h5py +multifile"]
    tags = {"python", "multifile", "correctness"}
    num_tasks = 4
    time_limit = "10m"
    executable = "python3"

    @run_before("run")
    def set_commands(self):
        self.job.num_tasks = self.num_tasks
        launch = " ".join(self.job.launcher.run_command(self.job).split())
        # the interpreter h5py was built for (a Spack view's names it; the local stacks' is python3)
        python = self.executable = self.current_environ.extras.get("python", "python3")
        self.executable_opts = [WORKLOAD, "mf.h5", "--driver", "multifile"]
        self.prerun_cmds = [f"{launch} {python} {WORKLOAD} ref.h5 --driver mpio", 'echo "reference-status: $?"']
        self.postrun_cmds = [
            "status=$?",
            'echo "launcher-status: $status"',
            f"{python} -c 'import h5vfd; print(h5vfd.info(\"mf.h5\")); print(h5vfd.merge(\"mf.h5\", \"merged.h5\"))'",
            'h5diff ref.h5 merged.h5; echo "h5diff: $?"',
            'cmp ref.h5 merged.h5 && echo "bytes: equal"',
            f"{python} {WORKLOAD} merged.h5 --verify --writer-ranks {self.num_tasks}",
            "exit $status",
        ]

    @sanity_function
    def validate(self):
        return sn.all(
            reference_and_run_sanity(self)
            + [
                sn.assert_found(rf"MultifileInfo\(path='mf.h5', format=\d+, ranks={self.num_tasks}, state='complete'",
                                self.stdout, msg="h5vfd.info does not show a complete directory of every rank"),
                sn.assert_found(r"^h5diff: 0$", self.stdout, msg="the merged file differs from MPI-IO's"),
                sn.assert_found(r"^bytes: equal$", self.stdout, msg="the merged file is not byte-identical"),
                sn.assert_found(r"every value of merged.h5 checked", self.stdout, msg="the serial read failed"),
            ]
        )
