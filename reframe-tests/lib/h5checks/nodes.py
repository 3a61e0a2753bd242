# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Ranks on several nodes, proven: for partitions with the feature `multinode` (the
emulated cluster `slurm-cluster`, a real cluster's partitions).

A check that mixes in `MultiNodeMixin` runs, before its own program and with the
partition's launcher in the same job (the same allocation, the same task count),
src/mpi_nodes.c built with the environment's compiler: it prints the distinct hostnames
of the ranks, the communicators of MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and the
result of a ring of 1 MiB messages. `nodes_sanity(test)` (which `mpi.mpi_sanity` adds)
asserts at least two hostnames, one shared-memory communicator per node, and an intact
ring that crossed from node to node. Elsewhere, and for single-rank jobs, both do nothing.
"""

import os
import re

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_before, variable

FEATURE = "multinode"
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src", "mpi_nodes.c")


def spans_nodes(test):
    """Whether the test's ranks must spread over several nodes here."""
    return FEATURE in test.current_partition.features and (test.num_tasks or 1) > 1 and not test.one_node


def job_cpus(test):
    """The CPUs a job of the test's partition has: a node's (processor.num_cpus, 0 when not
    known), times the nodes its access options ask for (--nodes=N, -N N) where the
    partition spreads jobs over nodes; a node's where they name no number, or the test
    keeps to one node."""
    cpus = test.current_partition.processor.num_cpus or 0
    if FEATURE not in test.current_partition.features or getattr(test, "one_node", False):
        return cpus
    nodes = re.search(r"(?:--nodes[= ]|-N ?)(\d+)", " ".join(test.current_partition.access))
    return cpus * (int(nodes.group(1)) if nodes else 1)


def rank_hosts(test):
    """The hostname of each rank (deferred: a list once the job ran)."""
    return sn.extractsingle(r"^mpi-rank-hosts: (\S+)", test.stdout, 1, lambda v: v.split(","))


def probe_commands(test):
    """Shell lines that build mpi_nodes and run it on the job's ranks with the partition's launcher."""
    launcher = getlauncher(test.current_partition.launcher_type.registered_name)()
    cc = test.current_environ.cc or "mpicc"
    run = " ".join(launcher.command(test.job) + launcher.options)
    return [f'{cc} -O2 -o mpi_nodes "{SOURCE}"', f"{run} ./mpi_nodes"]


class MultiNodeMixin(rfm.RegressionTestPlugin):
    #: the ranks run on one node by design (an image's own mpiexec): no spread, one node asked for
    one_node = variable(bool, value=False)

    @run_before("run", always_last=True)  # after the check's own prerun commands are set
    def nodes_probe(self):
        if spans_nodes(self):
            self.prerun_cmds = probe_commands(self) + list(self.prerun_cmds)
        elif FEATURE in self.current_partition.features:
            self.job.options += ["--nodes=1", "--overcommit"]  # all its ranks on the one node


@sn.deferrable
def _shared(hosts, first):
    return sorted(set(hosts[:first]) & set(hosts[first:]))


def apart_sanity(test, first):
    """Assertions that ranks 0..first-1 (servers) ran on other nodes than the rest (clients)."""
    if not spans_nodes(test):
        return []
    return [sn.assert_eq(_shared(rank_hosts(test), first), [],
                         msg=f"ranks 0..{first - 1} and the others share node(s) {{0}}")]  # fmt: skip


def nodes_sanity(test):
    """Assertions that the job's ranks ran on >= 2 nodes that talked to each other."""
    if not spans_nodes(test):
        return []
    nodes = sn.extractsingle(r"^mpi-nodes: (\d+) (\S+)", test.stdout, 1, int)
    names = sn.extractsingle(r"^mpi-nodes: (\d+) (\S+)", test.stdout, 2)
    comms = sn.extractsingle(r"^mpi-shared-comms: (\d+)", test.stdout, 1, int)
    crossings = sn.extractsingle(r"^mpi-p2p: ok \d+ ranks, (\d+) crossings", test.stdout, 1, int)
    return [
        sn.assert_ge(nodes, 2, msg=f"the ranks ran on {{0}} node(s) ({names}); the partition spreads them over >= 2"),
        sn.assert_eq(comms, nodes, msg="MPI_COMM_TYPE_SHARED made {0} communicators for {1} nodes"),
        sn.assert_ge(crossings, 2, msg="the ring of messages crossed between nodes {0} time(s)"),
    ]
