# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""What the tests of the emulated cluster share (test_cluster.py with its CephFS,
test_cluster_glusterfs.py with its GlusterFS): starting it with a scratch file system,
skipping where this machine cannot run it, srun's settings, and the coherence probe."""

import os
import re
import subprocess
import sys
import time

import pytest

from conftest import ROOT, h5stack, in_stack
from h5stack.base import paths
from h5stack.machine import cluster as emulation
from h5stack.machine import fusemounts
from h5stack.reframe.environs import reframe_environ_name

#: the stack of the cluster's MPI tests (Open MPI: slurm-cluster's site config says why not MPICH)
STACK = "openmpi-hdf5-1.14"
NODES = 3
CLOCK_STEP = 9


def start(fs):
    return h5stack("cluster", "start", "--nodes", str(NODES), "--clock-step", str(CLOCK_STEP), "--fs", fs)


def running_cluster(fs):
    """A fixture's body: the cluster started afresh with its scratch on fs (a file system an
    interrupted run left full of files would fail every test), its environment, then stopped."""
    h5stack("cluster", "stop", "--wipe", check=True)
    proc = start(fs)
    # a capability of the kernel or the user, named by the command; a missing program is no
    # reason to skip: the set-up installs them (requirements/debian.txt)
    missing = ("needs root", "no time namespaces", "cannot make the namespaces")
    if proc.returncode != 0 and any(m in proc.stderr for m in missing):
        pytest.skip(f"no emulated cluster on this machine: {proc.stderr.strip()[-500:]}")
    assert proc.returncode == 0, proc.stderr
    assert f"export SLURM_CONF={emulation.conf_path()}" in proc.stdout
    yield emulation.env()
    h5stack("cluster", "stop", check=True)


def cluster_fixtures(fs):
    """A test module's fixtures (`started, cluster = cluster_fixtures(fs)`): `started`, the
    cluster running with its scratch on fs for the module (running_cluster); `cluster`, its
    environment for one test, the cluster whole again after it (restoring)."""

    @pytest.fixture(scope="module")
    def started():
        yield from running_cluster(fs)

    @pytest.fixture
    def cluster(started):
        yield from restoring(fs, started)

    return started, cluster


def restoring(fs, cluster_env):
    """A test fixture's body: the running cluster's environment, and after the test the
    cluster whole again (restored)."""
    yield cluster_env
    done = restored(fs, cluster_env)
    if done:
        print(f"after the test: {done}")


def restored(fs, cluster_env):
    """After a test: the jobs it left behind cancelled; a cluster that is then not whole (a
    node down, a daemon gone, a mount that does not answer) is started afresh, its file
    system wiped, so that one test's failure is not the next one's. What was done, or ''."""
    done = []
    jobs = subprocess.run(["squeue", "-h", "-o", "%i"], env=cluster_env, capture_output=True, text=True).stdout.split()
    if jobs:
        subprocess.run(["scancel", *jobs], env=cluster_env, capture_output=True)
        for _ in range(60):
            if not subprocess.run(["squeue", "-h"], env=cluster_env, capture_output=True, text=True).stdout.strip():
                break
            time.sleep(1)
        done.append(f"jobs {', '.join(jobs)} cancelled")
    status = h5stack("cluster", "status", timeout=300)
    if status.returncode != 0 or not fusemounts.answers(emulation.scratch_mountpoint(fs)):
        h5stack("cluster", "stop", "--wipe", check=True)
        assert start(fs).returncode == 0
        done.append(f"the cluster started afresh; it was:\n{status.stdout}")
    return "; ".join(done)


def site_config():
    """slurm-cluster's site config as ReFrame loads it now (with the running cluster's scratch)."""
    sys.path.append(os.path.join(ROOT, "site-configs"))
    import config

    return config.load_system(os.path.join(ROOT, "site-configs", "slurm-cluster", "reframe.py"))


def srun_env(stack):
    """The variables slurm-cluster's site config gives the stack's environment (srun's PMI,
    Open MPI's one-sided component): the one place that says what MPI needs there."""
    env = next(e for e in site_config()["environments"] if e["name"] == reframe_environ_name(stack))
    return dict(env.get("env_vars", []))


def stale_reads(directory, cluster_env, reads=20):
    """tests/integration/programs/coherence.c in directory on two nodes: rank 1 (node02)
    reads a block, rank 0 (node01) overwrites it, barrier, rank 1 reads it again; through
    O_DIRECT and through the page cache. {'direct': n, 'plain': n}: the stale second reads."""
    source = os.path.join(ROOT, "tests", "integration", "programs", "coherence.c")
    program = os.path.join(paths.sub("scratch"), f"coherence_{os.getpid()}")
    data = f"coherence-{os.getpid()}.bin"
    script = f"""
        mpicc -O2 -o {program} {source}
        cd {directory}
        srun --mpi=pmix -N2 -n2 --ntasks-per-node=1 {program} {data} {reads} direct
        srun --mpi=pmix -N2 -n2 --ntasks-per-node=1 {program} {data} {reads} plain
        rm -f {program} {data}
    """
    proc = in_stack(STACK, script, timeout=300, env=dict(cluster_env, **srun_env(STACK)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = dict(
        re.findall(rf"^coherence: (\w+): (\d+) of {reads} reads after the writer's barrier", proc.stdout, re.M)
    )
    assert set(found) == {"direct", "plain"}, proc.stdout
    return {k: int(v) for k, v in found.items()}
