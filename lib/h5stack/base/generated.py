# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Files generated from others and committed (the HDF5 patches beside the hdf5 recipe,
h5vfd's C constants, environments/): written when they differ, or only checked
(`--check`)."""

import os

from h5stack.base.ui import info


def refresh(target, text, check):
    """Make target hold text (a link there is replaced by a file); with check, write
    nothing. Returns [target] when it is stale and check is set, else []."""
    current = None if os.path.islink(target) or not os.path.exists(target) else open(target).read()
    if current == text:
        info(f"{target}: up to date")
        return []
    if check:
        return [target]
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.lexists(target):
        os.remove(target)
    with open(target, "w") as f:
        f.write(text)
    info(f"{target}: written ({len(text.splitlines())} lines)")
    return []
