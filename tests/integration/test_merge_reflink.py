# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The multifile merge on file systems with reflinks (XFS with reflink=1, Btrfs), each
made on a loop device: the reconstructed file shares the blocks of the rank files
(copy_file_range lets the file system clone them) instead of copying them, and holds
the same bytes as a merge onto a file system that has to copy.

A real file system on a real loop device needs root; the tests fail (they do not skip)
where it cannot be made, since the project's machines can."""

import os
import shutil
import subprocess

import pytest

from conftest import in_stack

STACK = "mpich-hdf5-1.14"  # a plain stack: the multifile package, as a plugin
GIB = 1 << 30
#: mkfs per file system; both make reflinks (XFS: -m reflink=1, its default since 5.1)
MKFS = {"xfs": ["mkfs.xfs", "-q", "-m", "reflink=1"], "btrfs": ["mkfs.btrfs", "-q"]}


def _used(path):
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


@pytest.fixture(params=sorted(MKFS))
def reflink_fs(request, tmp_path):
    """A fresh file system of the given kind, 4 GiB (sparse image), mounted on a loop device."""
    image, mnt = tmp_path / "fs.img", tmp_path / "mnt"
    mnt.mkdir()
    with open(image, "wb") as f:
        f.truncate(4 * GIB)
    tool = shutil.which(MKFS[request.param][0])
    assert tool, f"{MKFS[request.param][0]} is missing (requirements/debian-integration.txt)"
    subprocess.run([tool, *MKFS[request.param][1:], str(image)], check=True, capture_output=True)
    proc = subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], capture_output=True, text=True)
    assert proc.returncode == 0, f"cannot mount a {request.param} loop device: {proc.stderr}"
    try:
        yield request.param, mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_merge_shares_the_blocks_of_the_rank_files(reflink_fs, tmp_path):
    kind, mnt = reflink_fs
    # 2 ranks x one 512 MiB chunk, written as rows of 64 KiB: one record per rank, its
    # bytes congruent to their file addresses modulo 4096 in the rank files
    proc = in_stack(STACK, (
        "mpiexec -n 2 h5pwrite3dc big.h5 2 1 --size 8192 --chunk 8192 --driver multifile --no-limits --quiet\n"
        "h5mf info big.h5"
    ), cwd=mnt, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    before = _used(mnt)
    proc = in_stack(STACK, "h5mf merge big.h5 -o merged.h5 --no-verify -q", cwd=mnt, timeout=900)
    assert proc.returncode == 0, proc.stderr
    grew = _used(mnt) - before
    size = os.path.getsize(mnt / "merged.h5")
    assert size > GIB, proc.stdout
    # the data blocks are shared: the file system grew by far less than the file's size
    assert grew < size // 10, f"{kind}: merge of {size} bytes used {grew} new bytes: blocks copied, not shared"
    # the same bytes as a merge onto a file system that copies (the test's tmp)
    copied = tmp_path / "copied.h5"
    proc = in_stack(STACK, f"h5mf merge big.h5 -o {copied} -q && cmp merged.h5 {copied}", cwd=mnt, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    copied.unlink()
