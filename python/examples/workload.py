# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A parallel h5py workload: what a simulation writes, through any driver, checked on reading.

    mpiexec -n 4 python3 workload.py out.h5 --driver mpio           # HDF5's MPI-IO driver
    mpiexec -n 4 python3 workload.py out.h5 --driver multifile      # a multifile file (head and directory)
    mpiexec -n 3 python3 workload.py out.h5 --verify --writer-ranks 4 --driver multifile
    python3 workload.py merged.h5 --verify --writer-ranks 4         # serially, an ordinary file
    mpiexec -n 2 h5dsm-server --size 64m --action 'dump:dsm_{step}.h5' : \\
        -n 4 python3 workload.py mem.h5 --driver dsm                # in the memory of 2 servers

It writes groups and attributes, a contiguous dataset (independent writes), a chunked
one and a compressed one (collective writes: parallel HDF5 writes filtered chunks only
collectively), and a dataset that grows over three steps. Every value depends only on
the writer's rank, so any number of readers checks all of it.
"""

import argparse
import sys

import h5py
import h5vfd  # registers driver="multifile" and driver="dsm" with h5py
import numpy as np
from mpi4py import MPI

ROWS, WIDTH, STEPS, GROW = 64, 32, 3, 10


def communicator(driver):
    """The ranks that do I/O: in a DSM job MPI.COMM_WORLD holds the servers too."""
    return h5vfd.dsm_clients() if driver == "dsm" else MPI.COMM_WORLD


def contiguous(rank):
    return np.arange(1000, dtype="f8") * (rank + 1)


def chunked(rank):
    return (rank * 100000 + np.arange(ROWS * WIDTH, dtype="i4")).reshape(ROWS, WIDTH)


def compressed(rank):
    return np.full(256, rank, dtype="f4") + np.linspace(0, 1, 256, dtype="f4")


def grown(rank, step):
    return np.arange(GROW, dtype="i8") + 1000 * step + 100 * rank


def write(f, comm):
    rank, n = comm.rank, comm.size
    f.attrs["title"] = "h5vfd workload"
    f.attrs["writer_ranks"] = n
    step = f.create_group("run/step0")
    step.attrs["time"] = 0.5
    contig = step.create_dataset("contiguous", (n, 1000), "f8")
    contig[rank] = contiguous(rank)  # independent
    chunks = step.create_dataset("chunked", (n * ROWS, WIDTH), "i4", chunks=(16, WIDTH))
    with chunks.collective:
        chunks[rank * ROWS : (rank + 1) * ROWS] = chunked(rank)
    gz = step.create_dataset("compressed", (n * 256,), "f4", chunks=(256,), compression="gzip", shuffle=True)
    with gz.collective:
        gz[rank * 256 : (rank + 1) * 256] = compressed(rank)
    growing = f.create_dataset("growing", (0,), "i8", maxshape=(None,), chunks=(64,))
    for s in range(STEPS):
        start = growing.shape[0]
        growing.resize((start + n * GROW,))
        growing[start + rank * GROW : start + (rank + 1) * GROW] = grown(rank, s)


def verify(f, writers):
    """Every value of a file written by `writers` ranks; raises AssertionError naming the first wrong one."""
    assert f.attrs["title"] == "h5vfd workload" and f.attrs["writer_ranks"] == writers, dict(f.attrs)
    assert f["run/step0"].attrs["time"] == 0.5
    step = f["run/step0"]
    assert step["compressed"].compression == "gzip", step["compressed"].compression
    for w in range(writers):
        np.testing.assert_array_equal(step["contiguous"][w], contiguous(w), err_msg=f"contiguous, writer {w}")
        np.testing.assert_array_equal(step["chunked"][w * ROWS : (w + 1) * ROWS], chunked(w), f"chunked, writer {w}")
        np.testing.assert_array_equal(step["compressed"][w * 256 : (w + 1) * 256], compressed(w), f"compressed, {w}")
        for s in range(STEPS):
            at = s * writers * GROW + w * GROW
            np.testing.assert_array_equal(f["growing"][at : at + GROW], grown(w, s), f"growing, writer {w}, step {s}")
    assert f["growing"].shape == (STEPS * writers * GROW,)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("file")
    p.add_argument("--driver", default=None, help="mpio, multifile or dsm (default: HDF5's own choice)")
    p.add_argument("--config", help="the driver's configuration string (multifile, dsm)")
    p.add_argument("--verify", action="store_true", help="read the file and check every value")
    p.add_argument("--writer-ranks", type=int, help="ranks that wrote the file (with --verify)")
    args = p.parse_args()
    comm = communicator(args.driver)
    kwargs = {"driver": args.driver, "comm": comm} if args.driver else {}
    if args.config:
        kwargs["config"] = args.config
    if args.verify:
        with h5py.File(args.file, "r", **kwargs) as f:
            verify(f, args.writer_ranks or comm.size)
        print(f"workload: rank {comm.rank}: every value of {args.file} checked")
    else:
        with h5py.File(args.file, "w", **kwargs) as f:
            write(f, comm)
        comm.Barrier()
        if comm.rank == 0:
            print(f"mpi-ranks: {comm.size}\nmpi-library: {MPI.Get_library_version().splitlines()[0]}")
            print(f"workload: {args.file} written by {comm.size} ranks through {args.driver or 'the default driver'}")


if __name__ == "__main__":
    sys.exit(main())
