# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The commit-msg hook (.githooks/commit-msg): a subject of at most 72 characters, and a
blank line before the body."""

import os
import subprocess

import pytest

from conftest import ROOT

HOOK = os.path.join(ROOT, ".githooks", "commit-msg")


@pytest.mark.parametrize(
    "message, ok",
    [
        ("multifile: one subject\n\nthe detail\n", True),
        ("a" * 72 + "\n", True),
        ("# a comment git strips\nsubject\n", True),
        ("a" * 73 + "\n\nbody\n", False),
        ("subject\nbody without a blank line\n", False),
        ("\n", False),
        ("   \n \n", False),
        ("\n\nsubject after blank lines\n\nbody\n", True),
        ("multifile: " + "\u00d7" * 61 + "\n", True),  # 72 characters, more bytes
        ("subject\r\n\r\nbody\r\n", True),
    ],
)
def test_the_hook_takes_a_short_subject_and_a_body(tmp_path, message, ok):
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message)
    proc = subprocess.run([HOOK, str(path)], capture_output=True, text=True)
    assert (proc.returncode == 0) == ok, (message, proc.stderr)
