# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The libhdf5 that h5py loaded, through ctypes: never a second copy in the process.

h5py's extension modules load libhdf5 privately (RTLD_LOCAL); dlopen of the same path
returns that same library, so the path is read from this process's memory map.
"""

from __future__ import annotations

import ctypes
import functools
import re

from .errors import DriverError


@functools.cache
def library() -> ctypes.CDLL:
    import h5py  # noqa: F401  (loads libhdf5)

    with open("/proc/self/maps") as f:
        paths = sorted({m.group(1) for m in re.finditer(r"\s(/\S*/libhdf5\.so[.\d]*)$", f.read(), re.M)})
    if len(paths) != 1:
        found = ", ".join(paths) or "none"
        raise DriverError(f"expected the one libhdf5 that h5py loaded, found: {found}")
    lib = ctypes.CDLL(paths[0])
    lib.H5Pset_driver_by_name.argtypes = [ctypes.c_int64, ctypes.c_char_p, ctypes.c_char_p]
    lib.H5Pset_driver_by_name.restype = ctypes.c_int
    return lib


def path() -> str:
    return library()._name


def mpi_handle_type(mpi_class) -> type:
    """ctypes type of an MPI handle: a 32-bit integer in MPICH, a pointer in Open MPI."""
    from mpi4py import MPI

    return ctypes.c_uint if MPI._sizeof(mpi_class) == ctypes.sizeof(ctypes.c_uint) else ctypes.c_void_p


def set_mpi_params(fapl_id: int, comm) -> None:
    """H5Pset_mpi_params(fapl, comm, MPI_INFO_NULL) with an mpi4py communicator."""
    from mpi4py import MPI

    lib = library()
    comm_t, info_t = mpi_handle_type(MPI.Comm), mpi_handle_type(MPI.Info)
    lib.H5Pset_mpi_params.argtypes = [ctypes.c_int64, comm_t, info_t]
    lib.H5Pset_mpi_params.restype = ctypes.c_int
    if lib.H5Pset_mpi_params(fapl_id, MPI._handleof(comm), MPI._handleof(MPI.INFO_NULL)) < 0:
        raise DriverError("H5Pset_mpi_params failed (see HDF5's error stack above)")
