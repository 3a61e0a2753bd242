# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""ReFrame configuration for a negative test: `generic` with a broken launcher.

The `singletons` launcher starts the program num_tasks times without an MPI
launcher (each copy is "rank 0 of 1") and reports success whatever they return,
as a wrong `mpirun` does. The tutorial checks must fail on it.
"""

import copy
import importlib.util
import os

from reframe.core.backends import register_launcher
from reframe.core.launchers import JobLauncher

GENERIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "site-configs", "generic", "reframe.py")


@register_launcher("singletons")
class SingletonsLauncher(JobLauncher):
    def command(self, job):
        return ["bash", "-c", f'for i in $(seq {job.num_tasks}); do "$0" "$@" & done; wait']


_spec = importlib.util.spec_from_file_location("h5stack_generic_config", GENERIC)
_generic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_generic)

site_configuration = copy.deepcopy(_generic.site_configuration)
for _partition in site_configuration["systems"][0]["partitions"]:
    _partition["launcher"] = "singletons"
