# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The file-system checks of the site configs on a stack: a check fails on a file system of
another type than the site config says, with both named, and skips an absent mount."""

import json
import os
import re
import subprocess

from conftest import ROOT

FS_CONFIG = os.path.join(ROOT, "tests", "data", "generic_filesystem.py")


def _fs_run(tmp_path, **env):
    cmd = [
        "reframe", "-C", ":" + FS_CONFIG, "--system", "generic", "-r", "-p", "^mpich-hdf5-1_14$",
        "-c", os.path.join(ROOT, "reframe-tests", "multifile", "workload.py"), "-n", "multifile_workload_write",
        "--prefix", str(tmp_path), "--perflogdir", str(tmp_path / "perflogs"),
        "--report-file", str(tmp_path / "report.json"),
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, **env), timeout=600)
    cases = json.load(open(tmp_path / "report.json"))["runs"][-1]["testcases"]
    return proc, [c for c in cases if not c["fixture"]]


def test_file_system_of_another_type_fails_with_both_named(tmp_path):
    proc, cases = _fs_run(tmp_path, H5STACK_TEST_FS_TYPE="xfs")
    assert proc.returncode != 0
    (case,) = cases
    assert case["result"] == "fail" and case["fail_phase"] == "sanity", case
    assert re.search(r"is on a \S+ file system; the site config says xfs", case["fail_reason"]), case["fail_reason"]


def test_absent_file_system_is_skipped_with_the_reason(tmp_path):
    proc, cases = _fs_run(tmp_path, H5STACK_TEST_FS_PATH="/h5stack-absent-mount/scratch")
    (case,) = cases
    assert case["result"] == "skip", case
    assert "/h5stack-absent-mount does not exist" in proc.stdout, proc.stdout[-3000:]  # the report has no reason
