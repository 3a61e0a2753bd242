# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The FUSE connection of a mount, found in a mount table without touching the mount (a
hung client would hold whoever touched it): the one that `./h5stack cluster stop` aborts."""

from h5stack.machine.fusemounts import connection_in

MOUNTINFO = """\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
25 22 0:21 / /sys/fs/fuse/connections rw,relatime shared:9 - fusectl fusectl rw
40 22 0:51 / /root/.cache/h5stack/cluster/cephfs rw,nosuid,nodev shared:20 - fuse.ceph-fuse ceph-fuse rw,user_id=0
41 22 0:52 / /mnt/gluster rw,relatime shared:21 - fuse.glusterfs localhost:/v rw,user_id=0
42 22 0:53 / /mnt/plain rw,relatime shared:22 - fuse /dev/fuse rw,user_id=0
43 22 7:3 / /mnt/xfs rw,relatime shared:23 - xfs /dev/loop3 rw
""".splitlines()


def test_each_fuse_mount_gives_its_connection():
    assert connection_in(MOUNTINFO, "/root/.cache/h5stack/cluster/cephfs") == 51
    assert connection_in(MOUNTINFO, "/mnt/gluster") == 52
    assert connection_in(MOUNTINFO, "/mnt/plain") == 53


def test_no_connection_where_no_fuse_file_system_is_mounted():
    assert connection_in(MOUNTINFO, "/mnt/xfs") is None
    assert connection_in(MOUNTINFO, "/sys/fs/fuse/connections") is None  # fusectl is not a FUSE mount
    assert connection_in(MOUNTINFO, "/nowhere") is None


def test_the_mount_on_top_is_the_one_found():
    stacked = MOUNTINFO + ["44 40 0:60 / /root/.cache/h5stack/cluster/cephfs rw - fuse.ceph-fuse ceph-fuse rw"]
    assert connection_in(stacked, "/root/.cache/h5stack/cluster/cephfs") == 60
