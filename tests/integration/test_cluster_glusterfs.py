# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The emulated cluster with its scratch on a GlusterFS (`./h5stack cluster start --fs
glusterfs`, machine/glusterfs.py): a networked file system every node mounts with a FUSE
client of its own, configured so that a read on one node sees what another node wrote
before it, which the CephFS of test_cluster.py does not give through its page cache; and
the checks that this fault keeps off the CephFS, with their files on it and ranks on two
nodes.

Needs what test_cluster.py needs; skipped, with the reason, where the cluster cannot run."""

import json
import re

from clusters import NODES, STACK, cluster_fixtures, site_config, stale_reads
from conftest import FULL, h5stack, in_turn
from h5stack.machine import cluster as emulation
from h5stack.machine import glusterfs

GLUSTERFS = emulation.scratch_mountpoint("glusterfs")


started, cluster = cluster_fixtures("glusterfs")


def test_status_names_the_volume_and_every_nodes_mount(cluster):
    proc = h5stack("cluster", "status", check=True)
    for i in range(1, NODES + 1):
        assert re.search(rf"^node{i:02d}: running, .*, GlusterFS mounted$", proc.stdout, re.M), proc.stdout
    assert f"glusterfs: volume {glusterfs.VOLUME}, 3/3 bricks online" in proc.stdout, proc.stdout
    assert all(v == "off" for v in glusterfs.applied_options().values()), glusterfs.applied_options()


def test_a_read_on_one_node_sees_what_another_node_wrote_before_a_barrier(cluster):
    """POSIX coherence across the nodes' clients, through the page cache's path as well:
    every second read of node02 gives node01's new block."""
    assert stale_reads(GLUSTERFS, cluster) == {"direct": 0, "plain": 0}


#: the checks whose MPI-IO reference reads another node's overwrite (multifile_workload,
#: which fails on the CephFS), the tutorial (its transfer in turn by the day) and h5py; with
#: --full every check of the stack
CHECKS = (
    []
    if FULL
    else [
        "multifile_workload",
        f"hdf5_tutorial_hyperslab%pattern=by_chunk%transfer={in_turn(['collective', 'independent'])[0]}",
        "h5py_workload",
    ]
)


def test_the_regression_on_glusterfs_across_nodes(cluster, stack_descriptions, tmp_path):
    """The checks with their files on the GlusterFS and ranks on two nodes: every case
    passes, and every case with a file system writes on this one."""
    path = tmp_path / "summary.json"
    args = ["run", "--system", "slurm-cluster", "--no-setup", "--keep-slurm", "--json", str(path), "--stack", STACK]
    proc = h5stack(*args, *CHECKS, timeout=3600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    cases = json.load(open(path))["cases"]
    passed = [c for c in cases if c["result"] == "pass"]
    assert passed and all(c["result"] in ("pass", "skip") for c in cases), cases
    if not FULL:  # multifile_workload write and read, the tutorial's 2, h5py's 1
        assert len(passed) == len(cases) == 5, cases
    # each check with a file system asserts that its directory is on the partition's
    # scratch of this type (h5checks/filesystems.py, fs_sanity): the GlusterFS
    (partition,) = site_config()["systems"][0]["partitions"]
    assert partition["extras"]["filesystems"][0] == {
        "name": "glusterfs",
        "path": GLUSTERFS,
        "type": glusterfs.FSTYPE,
    }
    assert any("%fs_kind=posix" in c["variant"] for c in passed), passed
