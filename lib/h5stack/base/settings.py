# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Every H5STACK_* environment variable: its name, default and meaning, in one table.

h5stack's code reads them only through `get(name)` (a name not in the table is a
KeyError); `./h5stack --help` shows the ones a user sets (`epilog()`), `./h5stack settings`
the values in effect, and docs/settings.md is `./h5stack settings --markdown`
(tests/unit/test_settings.py keeps it current).
Standard library only: the command line's help uses it before the virtual environment
exists.
"""

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    name: str
    default: str  # "" : unset
    meaning: str
    kind: str = "user"  # user: set by whoever runs h5stack; child: set by h5stack for what it starts


SETTINGS = (
    Setting("H5STACK_HOME", "~/.cache/h5stack", "cache and install root: sources, builds, stacks, images, logs"),
    Setting("H5STACK_NO_APT", "0", "1: install no Debian packages (they must be there already)"),
    Setting(
        "H5STACK_VENV", "", "the Python environment h5stack runs in, once it has re-executed itself there", "child"
    ),
    Setting("H5STACK_IOR", "", "the ior program of the IOR checks; {stack} is replaced by the stack's name"),
    Setting("H5STACK_SLURMCTLD_PORT", "6917", "slurm-local: slurmctld's port"),
    Setting("H5STACK_SLURMD_PORT", "6918", "slurm-local: slurmd's port"),
    Setting("H5STACK_CLUSTER_BRIDGE", "h5sbr0", "slurm-cluster: the name of the bridge between the emulated nodes"),
    Setting("H5STACK_CLUSTER_SUBNET", "10.77.0.0/24", "slurm-cluster: the nodes' IPv4 subnet"),
    Setting("H5STACK_CLUSTER_SLURMCTLD_PORT", "6927", "slurm-cluster: slurmctld's port"),
    Setting("H5STACK_CLUSTER_SLURMD_PORT", "6928", "slurm-cluster: the nodes' slurmd port"),
    Setting("H5STACK_CLUSTER_SHARED", "", "slurm-cluster: more directories the nodes share, separated by ':'"),
    Setting(
        "H5STACK_CLUSTER_FS",
        "local",
        "slurm-cluster: the partition's scratch file system: local (this machine's disk, shared), cephfs or glusterfs",
    ),
    Setting(
        "H5STACK_TEST_FULL", "0", "1: `./h5stack test` runs every per-stack check on every stack (as --full)", "test"
    ),
    Setting(
        "H5STACK_TEST_DAY",
        "",
        "a day of the year: `./h5stack test` selects what a run of that day does (the turns of tests/conftest.py)",
        "test",
    ),
    Setting(
        "H5STACK_SPACK_NO_CHECKSUM",
        "0",
        "1: the Spack tests install with --no-checksum (a source mirror holding a repack)",
        "test",
    ),
    Setting("H5STACK_TEST_FS_TYPE", "", "the file-system type the site config of the file-system tests claims", "test"),
    Setting("H5STACK_TEST_FS_PATH", "", "the mount the site config of the file-system tests claims", "test"),
    Setting("H5STACK_STACK", "", "the stack whose environment is in use (set by a stack's env.sh)", "child"),
    Setting(
        "H5STACK_SPACK_ENVS", "", "the Spack environments of `./h5stack run --spack-env`, for the site configs", "child"
    ),
    Setting(
        "H5STACK_MPI_RUNTIMES",
        "",
        "the runtime directories of `./h5stack run --mpi-runtime` (a stack with another MPI's library), for the site configs",
        "child",
    ),
)

_BY_NAME = {s.name: s for s in SETTINGS}


def get(name):
    """The variable's value, or its default when unset or empty."""
    return os.environ.get(name) or _BY_NAME[name].default


def is_set(name):
    """Is the variable set to something (not unset, not empty)? A name not in the table
    is a KeyError, as for get()."""
    return bool(os.environ.get(_BY_NAME[name].name))


def is_on(name):
    return get(name) == "1"


def epilog():
    """The settings a user sets, for `./h5stack --help` (the tests' own: docs/settings.md)."""
    rows = [s for s in SETTINGS if s.kind == "user"]
    width = max(len(s.name) for s in rows)
    lines = ["environment (docs/settings.md):"]
    for s in rows:
        default = f" (default {s.default})" if s.default and s.default != "0" else ""
        lines.append(f"  {s.name:<{width}}  {s.meaning}{default}")
    return "\n".join(lines) + "\n"


def current():
    """(setting, value in effect) of every setting."""
    return [(s, get(s.name)) for s in SETTINGS]


def markdown():
    """docs/settings.md."""
    kinds = {"user": "yours to set", "test": "the project's tests", "child": "set by h5stack for what it starts"}
    lines = [
        "<!-- Generated from lib/h5stack/base/settings.py: `./h5stack settings --markdown`; do not edit. -->",
        "# Settings",
        "",
        "Every environment variable h5stack reads. An unset or empty variable takes its default.",
        "",
        "| variable | default | meaning | who sets it |",
        "|---|---|---|---|",
    ]
    for s in SETTINGS:
        lines.append(f"| `{s.name}` | {f'`{s.default}`' if s.default else ''} | {s.meaning} | {kinds[s.kind]} |")
    return "\n".join(lines) + "\n"
