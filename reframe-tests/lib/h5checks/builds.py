# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""One C source of a check, built once per environment with its C compiler (h5pcc): the
base of the checks' build fixtures, each naming its sourcesdir, sourcepath and
executable."""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function


class SingleSourceBuild(rfm.CompileOnlyRegressionTest):
    build_system = "SingleSource"
    sourcesdir = "src"

    @run_before("compile")
    def set_flags(self):
        self.build_system.cflags = ["-std=c99", "-Wall", "-Wextra", "-O2"]

    @sanity_function
    def built(self):
        return sn.assert_not_found(r"error", self.stderr)
