# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Driver names for h5py: `File.driver` says "multifile" or "dsm" instead of "unknown".

h5py names a file's driver from a fixed table of the drivers it knows. For any other
one, the file's driver ID is compared with the ID of each of h5stack's drivers that
HDF5 has registered (H5FDis_driver_registered_by_name, then a file access list that
selects it by name: H5Pset_driver_by_name finds the registered driver), in the libhdf5
that h5py loaded; a name HDF5 has not registered is skipped, so nothing is loaded only
to name a file's driver.
"""

from __future__ import annotations

import ctypes

from . import _cnames, _libhdf5

#: the names h5py is taught (h5stack's drivers)
NAMES = (_cnames.MULTIFILE, _cnames.DSM)


def registered_id(name: str) -> int | None:
    """The ID HDF5 has registered for driver `name`, or None when it has none."""
    from h5py import h5p

    lib = _libhdf5.library()
    lib.H5FDis_driver_registered_by_name.argtypes = [ctypes.c_char_p]
    lib.H5FDis_driver_registered_by_name.restype = ctypes.c_int
    if lib.H5FDis_driver_registered_by_name(name.encode()) <= 0:
        return None
    probe = h5p.create(h5p.FILE_ACCESS)
    if lib.H5Pset_driver_by_name(probe.id, name.encode(), None) < 0:
        return None
    return probe.get_driver()


def driver_name(driver_id: int) -> str | None:
    """The name of h5stack's driver with this ID, or None."""
    for name in NAMES:
        if registered_id(name) == driver_id:
            return name
    return None


def teach_h5py() -> None:
    """Wrap h5py's `File.driver` so that it names h5stack's drivers (repeating it is harmless)."""
    import h5py

    known = h5py.File.driver
    if getattr(known.fget, "_h5vfd", False):
        return

    def driver(self) -> str:
        name = known.fget(self)
        if name != "unknown":
            return name
        return driver_name(self.id.get_access_plist().get_driver()) or name

    driver._h5vfd = True
    driver.__doc__ = known.__doc__
    h5py.File.driver = property(driver, doc=known.__doc__)
