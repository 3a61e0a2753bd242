# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""h5pwrite3dc's measurement of a shared file against multifile per CephFS layout, ranks on
two nodes of the emulated cluster: a measurement, so a file of its own, run alone (`./h5stack
test` runs test_cluster.py with other files beside it: lib/h5stack/testsuite/parts.py)."""

import json

from clusters import STACK, cluster_fixtures
from conftest import FULL, h5stack

started, cluster = cluster_fixtures("cephfs")


#: one of its 15 jobs a run; --full: every driver but the independent one, whose
#: shared-file writes ran for minutes per job on this CephFS (docs/regression.md; run it by
#: name)
LAYOUTS = (
    "h5pwrite3dc_layouts%fs_kind=cephfs%driver=(mpio|mpio-nohints|subfiling|multifile)%layout"
    if FULL
    else "h5pwrite3dc_layouts%fs_kind=cephfs%driver=mpio-nohints%layout=256Kx4"
)


def test_the_layouts_measurement_on_cephfs_across_nodes(cluster, stack_descriptions, tmp_path):
    """Every job passes on the CephFS, with its figures (the ratios the report draws per layout)."""
    path = tmp_path / "summary.json"
    args = ["run", "--system", "slurm-cluster", "--no-setup", "--keep-slurm", "--json", str(path), "--stack", STACK]
    proc = h5stack(*args, LAYOUTS, timeout=1800)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    cases = json.load(open(path))["cases"]
    assert len(cases) == (12 if FULL else 1) and all(c["result"] == "pass" for c in cases), cases
    assert all(c["check"] == "h5pwrite3dc_layouts" and "%fs_kind=cephfs" in c["variant"] for c in cases), cases
    assert all("=" in c["figures"] and "=none" not in c["figures"] for c in cases), cases  # its figures extracted
