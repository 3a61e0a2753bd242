# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Settings shared by every system's ReFrame configuration.

Each system has `site-configs/<system>/reframe.py`; it imports this module for the
`general` and `logging` sections and for its programming environments, which
lib/h5stack builds: those of the local stacks, of stacks installed on a cluster
(h5stack/reframe/environs.py) and of installed Spack environments' views
(h5stack/reframe/spackviews.py); the kinds of file system come from
reframe-tests/lib/h5checks/fskinds.py, the kinds of reference table from
reframe-tests/lib/h5checks/references.py, the schema of a site configuration from
schema.py.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(HERE), "lib"))
sys.path.append(os.path.join(os.path.dirname(HERE), "reframe-tests", "lib"))  # h5checks.fskinds, .references
# the names a system's reframe.py uses (common.X), each defined once where it belongs
from h5checks.fskinds import FS_FEATURES, KIND_OF_TYPE, fs_kind, size_bytes  # noqa: E402,F401
from h5checks.references import KINDS as REFERENCE_KINDS  # noqa: E402,F401

from h5stack.base import paths  # noqa: E402
from h5stack.reframe import perflog  # noqa: E402
from h5stack.reframe.environs import (  # noqa: E402,F401
    SiteConfigError,
    container_image,
    detect_fs_type,
    installed_stack_environment,
    local_stack_environments,
    local_stacks,
    this_machine_cluster_scratch,
    this_machine_container_platforms,
    this_machine_mpi_settings,
    this_machine_scratch,
)
from h5stack.reframe.spackviews import (  # noqa: E402,F401
    SpackViewError,
    spack_environment_dirs,
    spack_view_environments,
    spack_views,
)

sys.path.append(HERE)  # squeue_here and quiet_deprecations, beside this file
import quiet_deprecations  # noqa: E402,F401
import squeue_here  # noqa: E402

# File systems of a partition: extras['filesystems'], a list of
#   {'name': 'scratch',                    # a label (test names, perflogs)
#    'path': '/lus/scratch/$USER/h5stack', # where checks write ($VARS expanded on the node)
#    'type': 'lustre',                     # what `findmnt -T PATH` must report there
#    'kind': 'lustre' | 'gpfs' | 'cephfs' | 'posix',  # optional: derived from the type
#    'mount_options': ['flock'],           # optional: must be among the mount's options
#    'lustre': {'stripe_count': 8, 'stripe_size': '4M'},          # lfs setstripe on the directory
#    'gpfs': {'block_size': '16M', 'largeblock_io': True},        # IBM_largeblock_io hint
#    'cephfs': {'stripe_unit': '1M', 'stripe_count': 2, 'object_size': '4M'},  # setfattr ceph.dir.layout
#    'alignment': 4194304,                 # H5Pset_alignment(fapl, threshold, alignment)
#    'mpiio_hints': {'romio_cb_write': 'enable', 'striping_factor': '8'}}   # a ROMIO hints file
# The kind is also a partition feature: valid_systems = ['+lustre'], ['+gpfs'], ['+posixfs'].

#: the systems that run on this machine (ReFrame's local scheduler, a Slurm on loopback)
#: ask about their jobs at least twice a second: ReFrame's default slows its polls to one
#: in 10 s as a job runs, so a job of a minute ends seconds before ReFrame notices; a
#: site's own controller keeps ReFrame's defaults
THIS_MACHINE_SYSTEMS = ["generic", "slurm-local", "slurm-cluster"]

general = [
    {"poll_rate_min": 2, "target_systems": THIS_MACHINE_SYSTEMS},
    {
        "check_search_path": [os.path.join(os.path.dirname(HERE), "reframe-tests")],
        "check_search_recursive": True,
        "report_file": os.path.join(paths.home(), "reports", "run-report-{sessionid}.json"),
    },
]

logging = [
    {
        "level": "debug",
        "handlers": [
            {"type": "stream", "name": "stdout", "level": "info", "format": "%(message)s"},
            {
                "type": "file",
                "name": os.path.join(paths.sub("logs"), "reframe.log"),  # made if missing
                "level": "debug",
                "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
                "append": False,
            },
        ],
        # one line per test in the layout of h5stack.reframe.perflog: what `./h5stack report` reads
        "handlers_perflog": [
            {
                "type": "filelog",
                "prefix": "%(check_system)s/%(check_partition)s",
                "level": "info",
                **perflog.reframe_format(),
                "append": True,
            }
        ],
    }
]


def this_machine_slurm_site(system, descr, partition, srun_mpi, left_out=(), scratch=None):
    """The configuration of a system whose Slurm runs on this machine (slurm-local,
    slurm-cluster): one partition (its name, descr, access and extra features given in
    `partition`) with ReFrame's squeue backend and srun, the local stacks' and Spack views'
    environments with srun's settings per MPI (`srun_mpi`), less those of the MPIs in
    `left_out`, and `builtin`; the file system is `scratch`, else this machine's scratch."""
    envs = local_stack_environments([system], srun_mpi) + spack_view_environments(
        [system], spack_environment_dirs(), this_machine_mpi_settings(), srun_mpi
    )
    envs = [e for e in envs if e.get("extras", {}).get("mpi") not in left_out]
    scratch = scratch or this_machine_scratch()
    platforms, container_features = this_machine_container_platforms()
    features = ["slurm", *partition.get("features", []), FS_FEATURES[fs_kind(scratch)]] + container_features
    return {
        "systems": [
            {
                "name": system,
                "descr": descr,
                "hostnames": [".*"],
                "partitions": [
                    {
                        "name": partition["name"],
                        "descr": partition["descr"],
                        "scheduler": squeue_here.NAME,  # squeue, asked as often as a local controller allows
                        "launcher": "srun",
                        "access": partition["access"],
                        "max_jobs": 2,
                        "environs": ["builtin"] + [e["name"] for e in envs],
                        "features": features,
                        "container_platforms": platforms,
                        "extras": {"filesystems": [scratch], "references": "local"},
                        "processor": {"num_cpus": os.cpu_count()},
                    }
                ],
            }
        ],
        "environments": envs + [{"name": "builtin", "cc": "cc", "cxx": "c++", "ftn": "", "target_systems": [system]}],
        "general": general,
        "logging": logging,
    }
