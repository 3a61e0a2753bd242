# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""h5vfd: h5stack's HDF5 drivers from Python.

import h5vfd                      # registers driver="multifile" and driver="dsm" with h5py,
                                  # and their names for File.driver
from mpi4py import MPI
import h5py
with h5py.File("out.h5", "w", driver="multifile", comm=MPI.COMM_WORLD, config="checksums=off") as f:
    ...
h5vfd.info("out.h5")              # h5mf info, as a dataclass
h5vfd.merge("out.h5", "merged.h5")
h5vfd.open("out.h5")              # h5py.File with the driver a multifile file needs
"""

from importlib import metadata

from .drivers import DRIVERS, dsm_clients, open, register  # noqa: A004
from .errors import DriverError, H5mfError, MultifileHeadWarning
from .h5mf import MultifileInfo, RankInfo, info, merge, verify
from .layout import is_multifile

__all__ = [
    "DRIVERS",
    "DriverError",
    "dsm_clients",
    "H5mfError",
    "MultifileHeadWarning",
    "MultifileInfo",
    "RankInfo",
    "info",
    "is_multifile",
    "merge",
    "open",
    "register",
    "verify",
]
try:
    __version__ = metadata.version("h5vfd")  # h5stack's VERSION, installed with the package
except metadata.PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "unknown"

register()
