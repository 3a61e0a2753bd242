# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""MPI helpers of the checks: sanity (which MPI library ran, on how many ranks) and MPMD
command lines.

Programs print `mpi-ranks: N` and `mpi-library: <first line of MPI_Get_library_version>`
once per MPI run (rank 0). A launcher of the wrong MPI starts N singletons, which print
`mpi-ranks: 1` N times: the counts catch it. Checks mix in nodes.MultiNodeMixin, whose
assertions mpi_sanity includes.
"""

import os
import shlex

import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher

from h5checks.nodes import nodes_sanity

def mpi_sanity(test, expected_lines=1, num_tasks=None):
    """Assertions for `expected_lines` MPI runs of `num_tasks` (default: the test's) ranks, and on
    a `multinode` partition that the job's ranks spread over nodes (nodes.nodes_sanity)."""
    nranks = num_tasks or test.num_tasks
    extras = test.current_environ.extras
    banner = extras.get("mpi_library_signature")  # the site config's, from stacks.yaml for its MPIs
    ranks = sn.extractall(r"^mpi-ranks: (\d+)$", test.stdout, 1, int)
    libraries = sn.extractall(r"^mpi-library: (.*)$", test.stdout, 1)
    return [
        sn.assert_eq(ranks, [nranks] * expected_lines,
                     msg=f"expected 'mpi-ranks: {nranks}' from {expected_lines} run(s), got {{0}}"),
        sn.assert_true(banner is not None,
                       msg=f"the environment names no MPI signature (extras mpi={extras.get('mpi')!r})"),
        sn.assert_true(sn.all(sn.map(lambda lib: banner in lib, libraries)),
                       msg=f"not every run used {banner!r}: {{0}}"),
    ] + nodes_sanity(test)


def reference_and_run_sanity(test, driver="multifile"):
    """mpi_sanity for a check of two MPI runs: a reference through MPI-IO in prerun_cmds,
    which echoes `reference-status: $?`, and its own run through `driver`, whose status
    postrun_cmds echo first (`launcher-status: $status`); both exit 0."""
    return mpi_sanity(test, expected_lines=2) + [
        sn.assert_found(r"^reference-status: 0$", test.stdout, msg="the MPI-IO run failed"),
        sn.assert_found(r"^launcher-status: 0$", test.stdout, msg=f"the {driver} run failed"),
    ]


#: a program that prints only what mpi_sanity reads, for checks whose programs do not
RANKS_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src", "mpi_ranks.c")


def ranks_probe_cmds(test, launch):
    """Shell lines that build src/mpi_ranks.c with the environment's compiler and run it
    with `launch` (the launcher's words), for mpi_sanity(test) of a check whose own
    programs do not say which MPI ran them on how many ranks."""
    cc = test.current_environ.cc or "mpicc"
    return [f"{cc} -O2 -o mpi_ranks {shlex.quote(RANKS_SOURCE)}", shlex.join([*launch, "./mpi_ranks"])]


#: a program that says which driver an application's H5Pset_fapl_mpio gets
MPIO_PROBE_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src", "mpio_probe.c")


def mpio_probe_cmds(test, launch):
    """Shell lines that build src/mpio_probe.c with the environment's compiler (h5pcc) and
    run it with `launch` (the launcher's words, and what each rank runs under: a preload
    library) in probe/: it prints which driver H5Pset_fapl_mpio gave (mpio_probe_sanity)."""
    cc = test.current_environ.cc or "h5pcc"
    return [f"{cc} -O2 -o mpio_probe {shlex.quote(MPIO_PROBE_SOURCE)}",
            f"mkdir -p probe && (cd probe && {shlex.join([*launch, '../mpio_probe', 'probe.h5'])})"]  # fmt: skip


def mpio_probe_sanity(test, driver):
    """An assertion that the programs' H5Pset_fapl_mpio gave `driver` (mpio, multifile)."""
    return sn.assert_found(rf"^mpio-probe: {driver}$", test.stdout,
                           msg=f"an application's H5Pset_fapl_mpio did not get the driver {driver}")  # fmt: skip


def launch_command(test, *args):
    """A command line that starts `args` with the test's launcher on its num_tasks ranks
    (for a run in prerun_cmds or postrun_cmds beside the test's own executable)."""
    test.job.num_tasks = test.num_tasks
    return " ".join(test.job.launcher.run_command(test.job).split() + list(args))


def mpmd_command(test, programs):
    """A command line that starts several programs in one MPI job (MPMD), with the
    partition's launcher: `mpirun -np 2 server ... : -np 2 client ...` (mpirun, mpiexec),
    or `srun -n 4 --multi-prog FILE` with FILE written into the stage directory (srun).

    programs: [(ranks, [argv...]), ...], in rank order. Sets the job's task count to
    the total and its launcher to `local`: the result is the test's whole command line
    (its executable), not something for the partition's launcher to start again.
    """
    total = sum(n for n, _ in programs)
    test.num_tasks = test.job.num_tasks = total
    launcher = type(test.job.launcher).registered_name
    test.job.launcher = getlauncher("local")()
    if launcher == "srun":
        lines, first = [], 0
        for n, argv in programs:
            lines.append(f"{first}-{first + n - 1} {' '.join(argv)}")
            first += n
        conf = os.path.join(test.stagedir, "mpmd.conf")
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        return f"srun -n {total} --multi-prog {conf}"
    if launcher in ("mpirun", "mpiexec"):
        return " : ".join(f"{launcher} -np {n} {' '.join(argv)}" if i == 0 else f"-np {n} {' '.join(argv)}"
                          for i, (n, argv) in enumerate(programs))
    raise ValueError(f"no MPMD form for the launcher {launcher!r} (known: mpirun, mpiexec, srun)")
