# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""python/src/h5vfd/_cnames.py: the drivers' C constants that h5vfd uses, generated from
the C headers that define them (written by `./h5stack patches`, checked by `--check`
and the tests), so Python never holds a copy of its own."""

import os
import re

from h5stack.base import generated, paths
from h5stack.base.ui import StepError

TARGET = os.path.join(paths.PYTHON_PACKAGE_DIR, "src", "h5vfd", "_cnames.py")
_MF = os.path.join(paths.PACKAGES_DIR, "hdf5-vfd-multifile")
_DSM = os.path.join(paths.PACKAGES_DIR, "hdf5-vfd-dsm")
#: Python name -> (header, C macro): `#define MACRO "value"` (a string) or `#define MACRO
#: 123` (an integer)
CONSTANTS = {
    "MULTIFILE": (os.path.join(_MF, "include", "H5FDmultifile.h"), "H5FD_MULTIFILE_NAME"),
    "DSM": (os.path.join(_DSM, "include", "H5FDdsm.h"), "H5FD_DSM_NAME"),
    "METAFILE": (os.path.join(_MF, "src", "mf_format.h"), "MF_METAFILE_NAME"),
    "HEAD_MAGIC": (os.path.join(_MF, "src", "mf_head.h"), "MF_HEAD_MAGIC"),
    "HEAD_SLOT": (os.path.join(_MF, "src", "mf_head.h"), "MF_HEAD_SLOT"),
}
_DOC = {
    "MULTIFILE": "the multifile driver's name (H5Pset_driver_by_name, HDF5_DRIVER)",
    "DSM": "the DSM driver's name",
    "METAFILE": "the file that makes a directory a multifile directory",
    "HEAD_MAGIC": "the first bytes of a head's slot (a multifile file's head, layout=head)",
    "HEAD_SLOT": "where a head's slot begins",
}


def c_value(header, macro):
    """The value of `#define macro "value"` (as a Python string literal) or `#define
    macro 123` in header."""
    with open(header) as f:
        m = re.search(rf'^#\s*define\s+{macro}\s+("[^"\\]*"|\d+)(?=\s|$)', f.read(), re.M)
    if not m:
        raise StepError(f"{header}: no string or integer #define {macro}")
    return m.group(1)


def render():
    lines = [
        "# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause",
        '"""The drivers\' C constants (generated from their headers by `./h5stack patches`:',
        'edit the headers, never this file)."""',
        "",
    ]
    for name, (header, macro) in CONSTANTS.items():
        where = os.path.relpath(header, paths.ROOT)
        lines += [f"#: {_DOC[name]}", f"#: ({macro}, {where})", f"{name} = {c_value(header, macro)}"]
    return "\n".join(lines) + "\n"


def refresh(check):
    """Write _cnames.py when it differs (check: only report it). [TARGET] when stale and checked."""
    return generated.refresh(TARGET, render(), check)
