# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A fault is named once: each probe of the fault checks (reframe-tests/mpiio-faults,
reframe-tests/hdf5-faults) has its row in docs/faults.md, which links its program; every
fault stacks.yaml accepts as known, and every one the fuzzer names by its signature
(lib/h5stack/verify/known.py), is a probe of its check."""

import ast
import os
import re

import pytest
import yaml

from conftest import ROOT
from h5stack.verify import known

CHECKS = {  # check: (its file, the variable that lists its probes, the extras key of its known faults)
    "mpiio_faults": ("reframe-tests/mpiio-faults/mpiio_faults.py", "RUNS", "mpiio_known_faults"),
    "hdf5_faults": ("reframe-tests/hdf5-faults/hdf5_faults.py", "PROBES", "hdf5_known_faults"),
}


def probes(check):
    """The probes of a check, read from its file (the list or dict its `probe` parameter takes)."""
    path, name, _ = CHECKS[check]
    tree = ast.parse(open(os.path.join(ROOT, path)).read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            value = ast.literal_eval(node.value)
            return list(value)
    raise AssertionError(f"{path} has no {name}")


def known_faults():
    """{extras key: {probe, ...}} of stacks.yaml: the MPIs' and the HDF5 series'."""
    with open(os.path.join(ROOT, "stacks.yaml")) as f:
        config = yaml.safe_load(f)
    found = {"mpiio_known_faults": set(), "hdf5_known_faults": set()}
    for mpi in config["mpis"].values():
        found["mpiio_known_faults"] |= set(mpi.get("mpiio_known_faults") or {})
    for series in config["hdf5"].values():
        found["hdf5_known_faults"] |= set(series.get("known_faults") or {})
    return found


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_every_probe_has_its_row_in_the_fault_page(check):
    page = open(os.path.join(ROOT, "docs", "faults.md")).read()
    rows = [line for line in page.splitlines() if line.startswith("| ") and f"`{check} %probe=" in line]
    for probe in probes(check):
        mine = [r for r in rows if f"`{check} %probe={probe}`" in r]
        assert mine, f"docs/faults.md has no row whose site check is `{check} %probe={probe}`"
        assert any(re.search(r"\]\(\.\./reframe-tests/", r) for r in mine), f"{check} {probe}: no link to its program"


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_every_known_fault_is_a_probe_of_its_check(check):
    key = CHECKS[check][2]
    unknown = known_faults()[key] - set(probes(check))
    assert not unknown, f"stacks.yaml names {sorted(unknown)} under {key}, which {check} does not probe"


def test_every_signature_of_the_fuzzer_names_a_probe_of_its_check():
    for check, probe, _, _ in known.SIGNATURES:
        assert probe in probes(check), f"lib/h5stack/verify/known.py names {check} {probe}, which is no probe"


#: what failing reference runs printed (the ends of HDF5's error stacks, MPICH's message)
SHRINK = """  #007: H5Dchunk.c line 5811 in H5D__chunk_prune_fill(): unable to lock raw data chunk
  #008: H5Dchunk.c line 4542 in H5D__chunk_lock(): data pipeline read failed
  #009: H5Z.c line 1450 in H5Z_pipeline(): filter returned failure during read
h5fuzz: rank 1: operation 10 failed: H5Dset_extent /g1/d2 to 160 failed"""
BCAST = (
    "MPI_Bcast failed ... message sizes do not match across processes in the collective routine: "
    "Received 40 but expected 512"
)
OTHER = "  #005: H5Dio.c line 123 in H5D__read(): can't read data\nh5fuzz: rank 0: operation 7 failed: H5Dread /d2"


@pytest.mark.parametrize(
    "text, names",
    [(SHRINK, ["hdf5_faults %probe=shrink-filtered"]), (BCAST, ["hdf5_faults %probe=coll-md-cache"]), (OTHER, [])],
)
def test_the_fuzzer_names_the_known_fault_a_failure_looks_like(text, names):
    assert known.named(text) == names
    assert ("looks like no known fault" in known.said(text)) == (not names)
