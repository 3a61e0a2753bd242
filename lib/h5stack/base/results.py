# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A command's results for programs (`./h5stack run --json`, `./h5stack fuzz --json`):
written whole or not at all (a temporary file beside it, then renamed)."""

import json
import os
import tempfile

from h5stack.base.ui import info


def write_json(path, data):
    """Write data as JSON to path; True, or False with the reason said (the command's own
    results stand: the caller decides the exit status)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".summary-", dir=os.path.dirname(path) or ".")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        info(f"error: --json {path}: {e.strerror or e}")
        return False
    info(f"summary: {path}")
    return True
