# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""ReFrame configuration of `gpfs-cluster`: a TEMPLATE of a module-based production
system (Lmod, Open MPI and MPICH as modules) with IBM Storage Scale (GPFS) file
systems, for sites to copy and adapt (checked here with --dry-run).

ADAPT (marked "ADAPT" below): host names, partitions and Slurm access options, module
names, the prefixes of h5stack's installed Spack environments, and your GPFS mounts:
block size (`mmlsfs <fs> -B`), alignment (the block size, so HDF5 objects start on
block boundaries) and MPI-IO hints. IBM_largeblock_io=true suits large sequential
writes. Performance references are placeholders until calibrated.
"""

import os
import sys

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

SYSTEM = "gpfs-cluster"
H5STACK = "/sw/h5stack/environments"  # ADAPT
SRUN_MPI = {"mpich": [["SLURM_MPI_TYPE", "pmi2"]], "openmpi": [["SLURM_MPI_TYPE", "pmix"]]}


def stack(name, view, mpi, modules, version, multifile="plugin"):
    return common.installed_stack_environment(
        name, [SYSTEM], f"{H5STACK}/{view}", mpi, version, modules, multifile, SRUN_MPI[mpi]
    )


environments = [
    stack("openmpi-hdf5-1.14", "openmpi-hdf5-1.14/view", "openmpi", ["gcc/12", "openmpi/4.1"], "1.14.6"),
    stack(
        "openmpi-hdf5-1.14-multifile",
        "openmpi-hdf5-1.14/view-multifile",
        "openmpi",
        ["gcc/12", "openmpi/4.1"],
        "1.14.6",
        "builtin",
    ),
    stack("mpich-hdf5-1.14", "mpich-hdf5-1.14/view", "mpich", ["gcc/12", "mpich/4.1"], "1.14.6"),
    stack("openmpi-hdf5-2", "openmpi-hdf5-2/view", "openmpi", ["gcc/12", "openmpi/4.1"], "2.2.0"),
]
stacks = [e["name"] for e in environments]

GPFS_WORK = {
    "name": "work",
    "descr": "project work file system, 16 MiB blocks",
    "path": "/gpfs/projects/$USER/h5stack",  # ADAPT
    "type": "gpfs",
    "gpfs": {"block_size": "16M", "largeblock_io": True},
    "alignment": "16M",
    "mpiio_hints": {"romio_cb_write": "enable", "cb_buffer_size": 16777216},
}
GPFS_SCRATCH = {
    "name": "scratch",
    "descr": "scratch file system, 4 MiB blocks",
    "path": "/gpfs/scratch/$USER/h5stack",  # ADAPT
    "type": "gpfs",
    "gpfs": {"block_size": "4M", "largeblock_io": False},
    "alignment": "4M",
}

site_configuration = {
    "systems": [
        {
            "name": SYSTEM,
            "descr": "TEMPLATE: Lmod, Slurm, GPFS work and scratch",
            "hostnames": [r"^login\d+\.example\.org", r"^c\d+"],  # ADAPT
            "partitions": [
                {
                    "name": "compute",
                    "descr": "CPU compute nodes",
                    "scheduler": "slurm",
                    "launcher": "srun",
                    "access": ["--partition=compute"],  # ADAPT
                    "max_jobs": 20,
                    "environs": ["builtin"] + stacks,
                    "features": ["slurm", "gpfs"],
                    "extras": {"filesystems": [GPFS_WORK, GPFS_SCRATCH], "references": "cluster"},
                }
            ],
        }
    ],
    "environments": environments + [{"name": "builtin", "cc": "cc", "target_systems": [SYSTEM]}],
    "general": common.general,
    "logging": common.logging,
}
