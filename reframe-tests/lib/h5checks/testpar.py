# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Which of HDF5's parallel test programs (testpar) a run of the hdf5_testpar check
starts, in which order and with which arguments: those of the directory its environment
names, less the long ones and, through multifile, those the driver package's
exclusions.yaml (`parallel`) leaves out; a share K/N of them (every N-th from the K-th),
each program that reads another's files with that program."""

import os

import yaml

from h5checks.bounded import share_items

#: what HDF5's suite leaves out through multifile, and the long programs: one file, the
#: driver package's own tests read it too
EXCLUSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "packages",
                          "hdf5-vfd-multifile", "tests", "hdf5-suite", "exclusions.yaml")  # fmt: skip
#: programs that read what another left, run right after it (HDF5's ctest order)
READS_AFTER = {"t_prestart": "t_pshutdown", "t_pflush2": "t_pflush1"}
#: programs HDF5's own suite builds but does not run (testpar/CMakeTests.cmake)
HDF5_LEAVES_OUT = {"t_cache_image": 'HDF5\'s own suite does not run it ("do not test until new version is added")'}


def exclusions(path=EXCLUSIONS):
    with open(path) as f:
        return yaml.safe_load(f)["parallel"]


def found(directory):
    """HDF5's parallel test programs in the directory: testphdf5 and t_*, executable."""
    return [n for n in os.listdir(directory) if (n == "testphdf5" or n.startswith("t_"))
            and os.access(os.path.join(directory, n), os.X_OK)]  # fmt: skip


def units(names):
    """The programs in their run order, in units: a program alone, or a writer with the
    program that reads what it left."""
    readers = {w: r for r, w in READS_AFTER.items() if r in names and w in names}
    return [[n, readers[n]] if n in readers else [n] for n in sorted(names) if n not in readers.values()]


def select(names, driver, share="1/1", long=False, excl=None, known=None):
    """([program, or program=ARGS, ...] to run in order, {program: why it is left out});
    known: {program: reason} that the environment names as not ending with its MPI."""
    excl = excl or exclusions()
    left = {n: why for n, why in HDF5_LEAVES_OUT.items() if n in names}
    left |= {n: f"known on this environment: {why}" for n, why in (known or {}).items() if n in names}
    left |= {} if long else {n: f"long: {why}" for n, why in excl["full_only"].items() if n in names}
    args = {}
    if driver == "multifile":
        left |= {n: f"{e['class']}: {e['reason']}" for n, e in excl["programs"].items() if n in names}
        args["testphdf5"] = " ".join(f"-x {t}" for t in excl["testphdf5"])
    for reader, writer in READS_AFTER.items():  # a reader without the files of its writer
        if writer in left and reader in names and reader not in left:
            left[reader] = f"reads what {writer} leaves, which is left out"
    kept = units([p for p in names if p not in left])
    chosen = [p for unit in share_items(kept, share, "hdf5_testpar") for p in unit]
    return [f"{p}={args[p]}" if args.get(p) else p for p in chosen], left
