# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""ReFrame configuration of `lustre-cluster`: a TEMPLATE of a Cray-EX-style production
system with Lustre scratch, for sites to copy and adapt (checked here with --dry-run).

ADAPT (marked "ADAPT" below): host names, partition names and Slurm access options
(account), the module names of your MPI, the prefixes where you installed h5stack's
Spack environments (`spack -e environments/<stack> install`, view `view/`), and your
Lustre mounts with their striping, alignment and MPI-IO hints. The performance
references of the checks are placeholders until you calibrate them on your system.
"""

import os
import sys

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

SYSTEM = "lustre-cluster"
# ADAPT: where the Spack environments of h5stack are installed (their views)
H5STACK = "/appl/h5stack/environments"
MPI_MODULES = ["PrgEnv-gnu", "cray-mpich"]  # ADAPT: Cray MPICH, or your MPI's modules
# ADAPT: a substring of what your MPI's MPI_Get_library_version() prints (the checks
# verify that every run used that MPI); Cray MPICH prints "MPI VERSION : CRAY MPICH ..."
MPI_SIGNATURE = "CRAY MPICH"

environments = [
    common.installed_stack_environment(
        "cray-mpich-hdf5-1.14",
        [SYSTEM],
        f"{H5STACK}/mpich-hdf5-1.14/view",
        "mpich",
        "1.14.6",
        MPI_MODULES,
        mpi_signature=MPI_SIGNATURE,
    ),
    common.installed_stack_environment(
        "cray-mpich-hdf5-1.14-multifile",
        [SYSTEM],
        f"{H5STACK}/mpich-hdf5-1.14/view-multifile",
        "mpich",
        "1.14.6",
        MPI_MODULES,
        multifile="builtin",
        mpi_signature=MPI_SIGNATURE,
    ),
    common.installed_stack_environment(
        "cray-mpich-hdf5-2",
        [SYSTEM],
        f"{H5STACK}/mpich-hdf5-2/view",
        "mpich",
        "2.2.0",
        MPI_MODULES,
        mpi_signature=MPI_SIGNATURE,
    ),
]
stacks = [e["name"] for e in environments]

# ADAPT: the Lustre file systems of the compute nodes. Striping goes on the directory
# the checks write into (`lfs setstripe`); hints go into a ROMIO hints file
# (ROMIO_HINTS / MPICH_MPIIO_HINTS); alignment into H5Pset_alignment.
LUSTRE_SCRATCH = {
    "name": "scratch",
    "descr": "capacity scratch, HDD OSTs",
    "path": "/lus/scratch/$USER/h5stack",
    "type": "lustre",
    "mount_options": ["flock"],
    "lustre": {"stripe_count": 8, "stripe_size": "4M"},
    "alignment": "4M",
    "mpiio_hints": {
        "romio_cb_write": "enable",
        "romio_ds_write": "disable",
        "cb_nodes": 8,
        "striping_factor": 8,
        "striping_unit": 4194304,
    },
}
LUSTRE_FLASH = {
    "name": "flash",
    "descr": "flash tier, NVMe OSTs",
    "path": "/lus/flash/$USER/h5stack",
    "type": "lustre",
    "lustre": {"stripe_count": -1, "stripe_size": "1M"},
    "alignment": "1M",
    "mpiio_hints": {"romio_cb_write": "automatic"},
}

site_configuration = {
    "systems": [
        {
            "name": SYSTEM,
            "descr": "TEMPLATE: Cray EX, Slurm, Lustre scratch and flash",
            "hostnames": [r"^lx-login\d+", r"^nid\d+"],  # ADAPT
            "partitions": [
                {
                    "name": "login",
                    "descr": "login nodes (builds, pre-flight)",
                    "scheduler": "local",
                    "launcher": "local",
                    "environs": ["builtin"],
                    "features": ["login"],
                },
                {
                    "name": "compute",
                    "descr": "CPU compute nodes",
                    "scheduler": "slurm",
                    "launcher": "srun",
                    "access": ["--partition=standard", "--account=project_000000"],  # ADAPT
                    "max_jobs": 50,
                    "environs": ["builtin"] + stacks,
                    "features": ["slurm", "lustre"],
                    "extras": {"filesystems": [LUSTRE_SCRATCH, LUSTRE_FLASH], "references": "cluster"},
                    "resources": [{"name": "memory", "options": ["--mem={size}"]}],
                },
            ],
        }
    ],
    "environments": environments + [{"name": "builtin", "cc": "cc", "target_systems": [SYSTEM]}],
    "general": common.general,
    "logging": common.logging,
}
