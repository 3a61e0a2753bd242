# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The harness's own Python code keeps one style: ruff's linter and formatter
(settings in pyproject.toml; ReFrame checks keep ReFrame's style and are excluded)."""

import os
import subprocess
import sys

from conftest import ROOT

RUFF = os.path.join(os.path.dirname(sys.executable), "ruff")
TARGETS = [".", "h5stack"]  # h5stack has no .py suffix


def test_ruff_check():
    proc = subprocess.run([RUFF, "check", *TARGETS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format():
    proc = subprocess.run([RUFF, "format", "--check", *TARGETS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
