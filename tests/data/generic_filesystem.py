# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""ReFrame configuration for negative tests: `generic` with its scratch file system
changed by H5STACK_TEST_FS_TYPE (a type it is not) or H5STACK_TEST_FS_PATH (a mount
that does not exist). The file-system checks must fail, or skip, with the reason.
"""

import copy
import importlib.util
import os

GENERIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "site-configs", "generic", "reframe.py")

_spec = importlib.util.spec_from_file_location("h5stack_generic_config", GENERIC)
_generic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_generic)

site_configuration = copy.deepcopy(_generic.site_configuration)
for _partition in site_configuration["systems"][0]["partitions"]:
    for _fs in _partition["extras"]["filesystems"]:
        _fs["type"] = os.environ.get("H5STACK_TEST_FS_TYPE", _fs["type"])
        _fs["path"] = os.environ.get("H5STACK_TEST_FS_PATH", _fs["path"])
