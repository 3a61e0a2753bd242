# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""ReFrame configuration of `slurm-cluster`: an emulated cluster of 4 nodes on this machine.

`./h5stack cluster start` (which `./h5stack run --system slurm-cluster` does when the
cluster is not up) starts node01..node04, each in Linux namespaces of its own (network
on a bridge, hostname, private /tmp and /dev/shm, its own clocks) with its own slurmd of
Debian's Slurm 22.05; slurmctld and munged run on this machine (lib/h5stack/machine/cluster.py,
site-configs/slurm-cluster/slurm.conf.in, mpi.conf and node.sh). Every Slurm command needs
SLURM_CONF (`eval "$(./h5stack cluster env)"`).

One partition, `cluster`: every job gets 2 nodes (`--nodes=2`), so a check's ranks
spread over them (2 ranks: one per node; 4 ranks: two per node) and talk over the
network; the feature `multinode` makes the checks prove it (h5checks/nodes.py). srun's
PMI: pmix for Open MPI 4 and 5, pmi2 for MPICH 5 and Intel MPI (Debian's MPICH is left
out here: LEFT_OUT says why). The stacks under $H5STACK_HOME are shared by every node, as
a software tree is on a real cluster; the scratch is $H5STACK_HOME/scratch, shared the
same way, or the cluster's CephFS that every node mounts (`--fs cephfs`: CEPHFS below).
"""

import os
import sys

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

SYSTEM = "slurm-cluster"
#: srun's PMI per MPI; Open MPI's one-sided transfers (the DSM's MPI windows) across nodes:
#: over TCP its default choice finds no component that reaches every rank, UCX's does
SRUN_MPI = {
    "mpich": {"SLURM_MPI_TYPE": "pmi2"},
    "openmpi": {"SLURM_MPI_TYPE": "pmix", "OMPI_MCA_osc": "ucx"},
    "mpich5": {"SLURM_MPI_TYPE": "pmi2"},
    "openmpi5": {"SLURM_MPI_TYPE": "pmix"},
    "impi": {"SLURM_MPI_TYPE": "pmi2"},
}

#: MPIs left out here, and why: Debian 12's MPICH 4.0.2 (ch4:ucx) with UCX 1.13.1 hangs in
#: MPI_Finalize over UCX's TCP transport in about half the runs once ranks have exchanged
#: messages (also on one host with UCX_TLS=tcp,self; openucx/ucx#8738): between these nodes
#: TCP is its only transport. A real cluster's MPICH over InfiniBand or Slingshot is unaffected.
#: The wheels' MPIs (stacks.yaml, optional) start under srun with the PMI each supports
#: (pmi2: MPICH 5, Intel MPI; pmix: Open MPI 5).
LEFT_OUT = {
    "mpich": "MPI_Finalize hangs over UCX's TCP transport (Debian 12's MPICH 4.0.2, UCX 1.13.1)",
}

#: the partition's scratch when the cluster runs with a CephFS (`./h5stack cluster start
#: --fs cephfs`, H5STACK_CLUSTER_FS=cephfs): every file of a check's directory striped over
#: 2 objects in 1 MiB units, 4 MiB objects (applied with setfattr by the checks and
#: verified); HDF5 aligns its objects to the stripe unit, ROMIO gets it as a hint
CEPHFS = {
    "name": "cephfs",
    "cephfs": {"stripe_unit": "1M", "stripe_count": 2, "object_size": "4M"},
    "alignment": "1M",
}

site_configuration = common.this_machine_slurm_site(
    SYSTEM,
    "An emulated 4-node Slurm cluster on this machine (./h5stack cluster start), local stacks",
    {
        "name": "cluster",
        "descr": "node01..node04; each job on 2 of them",
        "access": ["--partition=cluster", "--nodes=2"],
        "features": ["multinode"],
    },
    SRUN_MPI,
    left_out=LEFT_OUT,
    scratch=common.this_machine_cluster_scratch(CEPHFS),
)
