# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""ReFrame configuration of `generic`: this machine, without a batch scheduler.

One partition, `default`, runs jobs with the local scheduler and MPI programs with
`mpirun`, which each programming environment resolves to its own MPI (the stack's
bin/ comes first on PATH). Programming environments: one per local stack built by
`./h5stack setup` (see site-configs/common.py), one per view of each installed Spack
environment named in $H5STACK_SPACK_ENVS (`./h5stack run --spack-env DIR`; named
spack-<environment>[-<view>]), plus ReFrame's `builtin`.

File system: $H5STACK_HOME/scratch, of the type this machine has there.

Run: ./h5stack run   (or reframe -C site-configs/config.py --system generic -r)
"""

import os
import sys

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

stack_envs = common.local_stack_environments(["generic"]) + common.spack_view_environments(
    ["generic"], common.spack_environment_dirs(), common.this_machine_mpi_settings()
)
scratch = common.this_machine_scratch()
container_platforms, container_features = common.this_machine_container_platforms()

site_configuration = {
    "systems": [
        {
            "name": "generic",
            "descr": "This machine, local scheduler, local stacks",
            "hostnames": [".*"],
            "partitions": [
                {
                    "name": "default",
                    "descr": "all cores of this machine",
                    "scheduler": "local",
                    "launcher": "mpirun",
                    # MPI jobs oversubscribe 2 cores: one at a time keeps them from starving
                    "max_jobs": 1,
                    "environs": ["builtin"] + [e["name"] for e in stack_envs],
                    "features": ["local", common.FS_FEATURES[common.fs_kind(scratch)]] + container_features,
                    "container_platforms": container_platforms,
                    "extras": {"filesystems": [scratch], "references": "local"},
                    "processor": {"num_cpus": os.cpu_count()},
                }
            ],
        }
    ],
    "environments": stack_envs
    + [{"name": "builtin", "cc": "cc", "cxx": "c++", "ftn": "", "target_systems": ["generic"]}],
    "general": common.general,
    "logging": common.logging,
}
