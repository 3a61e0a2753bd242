# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""What a path names on disk: a multifile file (its directory, or the head that names
it) or anything else. Read by the drivers' h5py glue and by h5py's error messages."""

from __future__ import annotations

import os

from . import _cnames


def is_multifile(path: str | os.PathLike) -> bool:
    """Is path a multifile file (written by the multifile driver, not merged): a multifile
    directory, or the head of one (layout=head: a small HDF5 file whose slot names the
    directory beside it)?"""
    if os.path.isdir(path):
        return os.path.isfile(os.path.join(path, _cnames.METAFILE))
    return is_head(path)


def is_head(path: str | os.PathLike) -> bool:
    """Does path begin like a head: a regular file with the slot's mark at its place?"""
    magic = _cnames.HEAD_MAGIC.encode()
    try:
        with open(path, "rb") as f:
            f.seek(_cnames.HEAD_SLOT)
            return f.read(len(magic)) == magic
    except OSError:
        return False
