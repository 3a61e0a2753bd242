# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The reference tables of the performance checks, built one way for all of them.

`local`: this machine's systems (`generic`, `slurm-local`, the emulated
`slurm-cluster`: 2 shared cores, the page cache), where the bounds only catch a collapse. `cluster`: the cluster templates,
where the values are placeholders for the site to calibrate. Each maps a performance
variable to (value, lower, upper), the bounds as fractions of the value (None: no
bound), in `unit`.
"""

LOCAL_PARTITIONS = ("generic:default", "slurm-local:local", "slurm-cluster:cluster")
CLUSTER_PARTITIONS = ("lustre-cluster:compute", "gpfs-cluster:compute")


def references(local, cluster, unit="ratio"):
    """ReFrame's `reference` for these values on every system of site-configs/."""
    table = {p: {k: (*v, unit) for k, v in local.items()} for p in LOCAL_PARTITIONS}
    table.update({p: {k: (*v, unit) for k, v in cluster.items()} for p in CLUSTER_PARTITIONS})
    return table
