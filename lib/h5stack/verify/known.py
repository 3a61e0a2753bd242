# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The known faults of HDF5 with MPI-IO that a fuzzer's reference run can meet, by what
they print: each is named by its probe of the site checks (reframe-tests/hdf5-faults),
whose row in docs/faults.md says whose fault it is and where its program is. The fuzzer
names the probe beside a failure whose output matches, so a fault found again is told
from a new one (which is reduced to a probe and added here).

Only failures that print something of their own are here: a fault that shows as wrong
values (contig-fill, unread-tail, never-written) is judged against the model instead.
A name changes no verdict: it is said beside the report (the runs' last few thousand
characters, where HDF5's error stack of the last failing rank is)."""

import re

#: (check, probe, a pattern of the failing run's output, a pattern that must match too)
SIGNATURES = [
    # a collective metadata read whose ranks' caches differ: MPI_Bcast of different sizes
    (
        "hdf5_faults",
        "coll-md-cache",
        r"message sizes do not match|Message truncated|MPI_ERR_TRUNCATE",
        r"MPI_Bcast|H5C__load_entry|H5C_protect",
    ),
    # the shrink of a filtered dataset, the edge chunk read while another rank wrote it
    ("hdf5_faults", "shrink-filtered", r"H5D__chunk_prune_fill", r"filter returned failure during read"),
    # HDF5 1.14.6's filters themselves: the chunk does not read back, on every rank
    ("hdf5_faults", "scaleoffset-int", r"H5Z__filter_scaleoffset", r"filter returned failure"),
    ("hdf5_faults", "nbit-after-deflate", r"H5Z__filter_nbit", r"filter returned failure"),
]


def named(text):
    """The site checks (`CHECK %probe=PROBE`) of the known faults whose signature `text`
    (a failing run's output) matches; [] for none."""
    return [
        f"{check} %probe={probe}"
        for check, probe, pattern, also in SIGNATURES
        if re.search(pattern, text) and re.search(also, text)
    ]


def said(text):
    """A line that names the known faults `text` looks like, or says it is none of them."""
    found = named(text)
    if found:
        return (
            "it looks like a known fault: " + ", ".join(f"`{f}`" for f in found) + " (docs/faults.md: whose it "
            "is and its program)"
        )
    return "it looks like no known fault (docs/faults.md lists them): reduce it to a program"
