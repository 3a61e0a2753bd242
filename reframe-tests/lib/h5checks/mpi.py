"""Sanity shared by MPI checks: which MPI library ran, on how many ranks.

Programs print `mpi-ranks: N` and `mpi-library: <first line of MPI_Get_library_version>`
once per MPI run (rank 0). A launcher of the wrong MPI starts N singletons, which print
`mpi-ranks: 1` N times: the counts catch it.
"""

import reframe.utility.sanity as sn

#: a substring of MPI_Get_library_version per value of the environment's extras['mpi']
MPI_BANNERS = {"mpich": "MPICH Version", "openmpi": "Open MPI"}


def mpi_sanity(test, expected_lines=1, num_tasks=None):
    """Assertions for `expected_lines` MPI runs of `num_tasks` (default: the test's) ranks."""
    nranks = num_tasks or test.num_tasks
    extras = test.current_environ.extras
    banner = extras.get("mpi_library_signature", MPI_BANNERS.get(extras.get("mpi")))
    ranks = sn.extractall(r"^mpi-ranks: (\d+)$", test.stdout, 1, int)
    libraries = sn.extractall(r"^mpi-library: (.*)$", test.stdout, 1)
    return [
        sn.assert_eq(ranks, [nranks] * expected_lines,
                     msg=f"expected 'mpi-ranks: {nranks}' from {expected_lines} run(s), got {{0}}"),
        sn.assert_true(banner is not None,
                       msg=f"the environment names no MPI signature (extras mpi={extras.get('mpi')!r})"),
        sn.assert_true(sn.all(sn.map(lambda lib: banner in lib, libraries)),
                       msg=f"not every run used {banner!r}: {{0}}"),
    ]
