# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A fault is named once: each probe of the fault checks (reframe-tests/mpiio-faults,
reframe-tests/hdf5-faults) has its row in docs/faults.md, which links its program, and
every fault stacks.yaml accepts as known is a probe of its check."""

import ast
import os
import re

import pytest
import yaml

from conftest import ROOT

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
