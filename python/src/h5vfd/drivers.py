# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The drivers as h5py drivers: `h5py.File(path, mode, driver="multifile", comm=..., config=...)`.

The drivers themselves are HDF5 plugins of the stack (HDF5_PLUGIN_PATH); h5py's
`register_driver` gets a function that selects one by name on the file access
property list (H5Pset_driver_by_name) and gives it the communicator
(H5Pset_mpi_params), in the libhdf5 that h5py loaded.
"""

from __future__ import annotations

import os
from typing import Any

from . import _cnames, _libhdf5, names
from .errors import DriverError
from .layout import is_head, is_multifile

#: the drivers registered with h5py; each reads its configuration string (see the drivers' READMEs)
DRIVERS = (_cnames.MULTIFILE, _cnames.DSM)


def _setter(name: str):
    def set_fapl(plist, comm=None, config: str | None = None) -> None:
        if config is not None and not isinstance(config, str):
            raise TypeError(f"config must be a string or None, not {config!r}")
        lib = _libhdf5.library()
        arg = config.encode() if config else None
        if lib.H5Pset_driver_by_name(plist.id, name.encode(), arg) < 0:
            where = os.environ.get("HDF5_PLUGIN_PATH", "(HDF5_PLUGIN_PATH is not set)")
            raise DriverError(
                f"HDF5 cannot load the driver {name!r} with configuration {config!r}: is its plugin on "
                f'HDF5_PLUGIN_PATH ({where})? `eval "$(./h5stack env STACK)"` sets it'
            )
        if comm is not None:
            _libhdf5.set_mpi_params(plist.id, comm)
        elif name == _cnames.MULTIFILE:
            raise DriverError("driver='multifile' needs comm= (an mpi4py communicator, e.g. MPI.COMM_WORLD)")

    return set_fapl


def register() -> None:
    """Register the drivers with h5py, their names for `File.driver`, and what to do
    with a multifile directory for h5py's error (done by `import h5vfd`; repeating it is
    harmless)."""
    import h5py

    from . import hints

    for name in DRIVERS:
        if name not in h5py.registered_drivers():
            h5py.register_driver(name, _setter(name))
    names.teach_h5py()
    hints.teach_h5py()


def open(path: str | os.PathLike, mode: str = "r", comm=None, **kwargs: Any):  # noqa: A001
    """h5py.File, with the driver a multifile file needs picked for it.

    A file written by the multifile driver (its directory, or the head that names it) is
    opened with driver="multifile" (the communicator: comm, else MPI.COMM_WORLD);
    read-only, it is read in place, as the driver does by default (the file stays as it
    is; config="read=merge" would replace it by the reconstructed file). Anything else
    opens as h5py would open it: h5py alone would open a head as the small HDF5 file it
    is, whose only content is the attribute that says what it is. A directory that is not
    a multifile directory is refused with the reason, where h5py would say only
    IsADirectoryError.
    """
    import h5py

    register()
    if "driver" not in kwargs and (os.path.isdir(path) or is_head(path)):
        if not is_multifile(path):
            raise DriverError(f"{os.fspath(path)}: a directory, but not a multifile directory (no metafile)")
        if comm is None:
            from mpi4py import MPI

            comm = MPI.COMM_WORLD
        return h5py.File(path, mode, driver=_cnames.MULTIFILE, comm=comm, **kwargs)
    if comm is not None:
        kwargs["comm"] = comm
    return h5py.File(path, mode, **kwargs)


def dsm_clients():
    """The communicator of the client ranks in an MPI job that runs the DSM's servers as
    its first program (`mpiexec -n S h5dsm-server ... : -n C python3 app.py`): what a
    client's decomposition uses (MPI.COMM_WORLD holds the servers too). Collective over
    the whole job once (the servers wait for it); the DSM driver joins the same way at
    the first open when a program does not call this."""
    import ctypes

    from mpi4py import MPI

    lib = _plugin("libh5fd_dsm.so")
    handle = _libhdf5.mpi_handle_type(MPI.Comm)()
    if lib.H5FD_dsm_mpmd_clients(ctypes.byref(handle)) < 0:
        raise DriverError("cannot join the DSM servers of this job (are they its first program?)")
    return MPI.Comm.fromhandle(handle.value)


def _plugin(name: str):
    """A driver's plugin library, as HDF5 finds it on HDF5_PLUGIN_PATH (the same copy)."""
    import ctypes

    for folder in os.environ.get("HDF5_PLUGIN_PATH", "").split(":"):
        path = os.path.join(folder, name)
        if folder and os.path.exists(path):
            return ctypes.CDLL(os.path.realpath(path))
    raise DriverError(f"{name} is not on HDF5_PLUGIN_PATH ({os.environ.get('HDF5_PLUGIN_PATH', 'not set')})")
