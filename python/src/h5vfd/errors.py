# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The package's exceptions."""

from __future__ import annotations


class DriverError(RuntimeError):
    """A driver could not be selected on a file access property list."""


class MultifileHeadWarning(UserWarning):
    """h5py opened the head of a multifile file with another driver than multifile: what
    it reads is the small HDF5 file that names the data's directory, not the data."""


class H5mfError(RuntimeError):
    """An `h5mf` operation failed: `message` is the tool's own, `returncode` its exit status."""

    def __init__(self, command: list[str], returncode: int, message: str):
        self.command = command
        self.returncode = returncode
        self.message = message
        super().__init__(message or f"{' '.join(command)} exited with status {returncode}")
