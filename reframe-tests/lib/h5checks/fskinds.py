# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The kinds of file system and how a site config names them: one source for the site
configs (site-configs/schema.py, the systems' partitions) and the checks
(filesystems.py). No ReFrame here, so the site configs can import it."""

#: file-system kind -> the partition feature that announces it
FS_FEATURES = {"posix": "posixfs", "lustre": "lustre", "gpfs": "gpfs", "cephfs": "cephfs"}
#: file-system type (as findmnt names it) -> its kind; every other type is posix
KIND_OF_TYPE = {"lustre": "lustre", "gpfs": "gpfs", "fuse.ceph-fuse": "cephfs", "ceph": "cephfs"}
#: CephFS's layout of a directory (setfattr -n ceph.dir.layout): the site config's keys
CEPHFS_LAYOUT = ("stripe_unit", "stripe_count", "object_size")


def fs_kind(fs):
    """The kind of a file system of extras['filesystems']: its own, else its type's."""
    return fs.get("kind") or KIND_OF_TYPE.get(fs.get("type"), "posix")


def size_bytes(value):
    """'4M', '1G', '65536' or an int -> bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = str(value).strip().upper()
    return int(text[:-1].strip()) * units[text[-1]] if text[-1] in units else int(text)
