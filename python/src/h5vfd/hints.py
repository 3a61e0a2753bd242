# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""What h5py says about a multifile directory it cannot open: what to do instead.

A multifile directory is one HDF5 file that only the multifile driver reads; h5py
with another driver (its default, or HDF5_DRIVER unset) fails on it with HDF5's "Is a
directory". Once h5vfd is imported that IsADirectoryError names the directory as
multifile and points to h5vfd.open and h5vfd.is_multifile.

A head (the path of a multifile file in the driver's default layout: a small HDF5 file
naming the directory of the data) opened with another driver opens, as the HDF5 file it
is, with a MultifileHeadWarning that names the directory and how to read the data.

Mode "a" on a multifile directory the driver cannot open read-write (e.g. one whose
writer did not close it) fails with the driver's reason for that, not with h5py's
fallback's "exists (H5F_ACC_EXCL)".
"""

from __future__ import annotations

import errno
import functools
import os
import warnings

from . import _cnames
from .errors import MultifileHeadWarning
from .layout import is_head, is_multifile
from .names import driver_name


def message(path: str) -> str:
    return (
        f"{path}: a multifile directory (one HDF5 file, written by the multifile driver), which only that "
        f"driver reads: open it with h5vfd.open({path!r}) (in place, nothing changed), or h5py.File(path, "
        "driver='multifile', comm=...) after `import h5vfd`; h5vfd.merge makes it an ordinary HDF5 file. "
        "h5vfd.is_multifile(path) tells such a directory from a file"
    )


def head_message(path: str) -> str:
    return (
        f"{path}: the head of a multifile file, opened with another driver than multifile: it holds no "
        f"data, only the name of the directory that does ({path}.h5mf unless renamed). Read the data with "
        f"h5vfd.open({path!r}) or driver='multifile'; h5vfd.merge({path!r}) makes it an ordinary HDF5 file"
    )


def _warn_if_head(fid, name, mode) -> None:
    """A head opened by another driver than multifile: a MultifileHeadWarning (a file
    created, mode w, w- or x, is no head: nothing is read for it)."""
    if mode not in ("r", "r+", "a") or not isinstance(name, (str, bytes, os.PathLike)):
        return
    path = os.fsdecode(name)
    if is_head(path) and driver_name(fid.get_access_plist().get_driver()) != _cnames.MULTIFILE:
        warnings.warn(head_message(path), MultifileHeadWarning, stacklevel=4)


def teach_h5py() -> None:
    """Wrap h5py's file opening so that its IsADirectoryError on a multifile directory
    carries message() (repeating it is harmless)."""
    from h5py._hl import files

    make_fid = files.make_fid
    if getattr(make_fid, "_h5vfd", False):
        return

    @functools.wraps(make_fid)
    def opened(name, mode, *args, **kwargs):
        try:
            fid = make_fid(name, mode, *args, **kwargs)
        except IsADirectoryError as e:
            path = os.fsdecode(name)
            if is_multifile(path):
                raise IsADirectoryError(errno.EISDIR, message(path)) from e
            raise
        except OSError as e:
            # mode "a": h5py opens read-write and, when that fails, creates the file
            # exclusively; on an existing multifile directory the second error ("exists")
            # hides the reason of the first, which is the one to give
            first = e.__context__
            if mode == "a" and isinstance(first, OSError) and is_multifile(os.fsdecode(name)):
                raise first from None
            raise
        _warn_if_head(fid, name, mode)
        return fid

    opened._h5vfd = True
    files.make_fid = opened
