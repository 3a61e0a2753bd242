# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""h5diff's exit status 2 is its own error (a file its HDF5 cannot read, an object it
cannot compare), never "the files differ": the packages' test scripts whose negative
controls expect a difference accept exit 1 only. Run on stand-ins (an h5diff that exits
with a given status, a launcher and programs that do nothing), so no stack is needed."""

import os
import stat
import subprocess

import pytest

from conftest import ROOT

# script, its arguments (the launcher first: "mpiexec" is the stand-in on PATH), and
# what it checks right after its negative control (so an accepted control gets there)
SCRIPTS = {
    "multifile compare_workload": (
        "packages/hdf5-vfd-multifile/tests/compare_workload.sh",
        ["mpiexec", "2", "true", "true", "builtin"],
        "mf.h5 is not a directory",
    ),
    "dsm roundtrip": (
        "packages/hdf5-vfd-dsm/tests/roundtrip.sh",
        ["mpiexec", "true", "true", "linear", "1", "2"],
        "+ mpiexec -n 1 true --size 2m",
    ),
}


def stand_ins(tmp_path, h5diff_status):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        "h5diff": f'#!/bin/sh\necho "0 differences found"\nexit {h5diff_status}\n',
        "mpiexec": '#!/bin/sh\nshift 2\nexec "$@"\n',  # mpiexec -n N PROGRAM ...
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(stat.S_IRWXU)
    return dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", TMPDIR=str(tmp_path))


@pytest.mark.parametrize("script", SCRIPTS)
def test_negative_control_refuses_h5diff_errors(script, tmp_path):
    path, args, _ = SCRIPTS[script]
    proc = subprocess.run(
        ["bash", os.path.join(ROOT, path), *args], env=stand_ins(tmp_path, 2), capture_output=True, text=True
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "exit 2, expected 1" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_negative_control_accepts_a_difference(script, tmp_path):
    """h5diff's exit 1 passes the control: the script goes on to its next step."""
    path, args, next_step = SCRIPTS[script]
    proc = subprocess.run(
        ["bash", os.path.join(ROOT, path), *args], env=stand_ins(tmp_path, 1), capture_output=True, text=True
    )
    assert "expected 1" not in proc.stdout and next_step in proc.stdout, proc.stdout + proc.stderr
