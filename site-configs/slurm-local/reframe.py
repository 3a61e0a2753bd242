# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""ReFrame configuration of `slurm-local`: this machine under a real Slurm.

Debian's Slurm 22.05 and munge, started on loopback by `./h5stack slurm start` (which
`./h5stack run --system slurm-local` does when Slurm is not up) with the configuration
site-configs/slurm-local/slurm.conf.in; every Slurm command needs SLURM_CONF
(`eval "$(./h5stack slurm env)"`).

One partition, `local`: jobs go through sbatch, ReFrame polls them with squeue (its
`squeue` backend, first asked 0.2 s after a submission: site-configs/squeue_here.py; the
`slurm` one needs sacct and a slurmdbd), MPI programs start with
srun. 4 ranks on 2 CPUs need `--overcommit`. srun's PMI differs per MPI (SLURM_MPI_TYPE in each environment): pmi2 for
Debian's MPICH, MPICH 5 and Intel MPI, pmix for Debian's Open MPI and Open MPI 5 (tried
with a 2-rank program: MPICH 5's PMI client refuses pmix, Open MPI 5 finds no PMIx under
pmi2; Intel MPI 2021.19 starts under both).
Programming environments: those of `generic` (local stacks, Spack views).
"""

import os
import sys

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

SYSTEM = "slurm-local"
SRUN_MPI = {
    "mpich": {"SLURM_MPI_TYPE": "pmi2"},
    "openmpi": {"SLURM_MPI_TYPE": "pmix"},
    "mpich5": {"SLURM_MPI_TYPE": "pmi2"},
    "openmpi5": {"SLURM_MPI_TYPE": "pmix"},
    "impi": {"SLURM_MPI_TYPE": "pmi2"},
}

site_configuration = common.this_machine_slurm_site(
    SYSTEM,
    "This machine under Slurm (./h5stack slurm start), local stacks",
    {"name": "local", "descr": "the one node of the local Slurm", "access": ["--partition=local", "--overcommit"]},
    SRUN_MPI,
)
