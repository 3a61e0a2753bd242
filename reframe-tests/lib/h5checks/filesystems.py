# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""File-system awareness for I/O checks: where to write, and how to tune it.

A partition's file systems are data in its extras (see site-configs/schema.py; the
kinds and their features are fskinds.py's):
`extras['filesystems']`, each with name, path, type, and optional Lustre striping,
GPFS block size / large-block I/O, HDF5 alignment and MPI-IO hints. A check that mixes
in `FileSystemMixin` gets one variant per file-system kind (`posix`, `lustre`, `gpfs`,
`cephfs`), runs on partitions with the matching feature (`+posixfs`, `+lustre`, `+gpfs`,
`+cephfs`) and, in its job script:
- creates its directory on the partition's first file system of that kind
  (`$fsdir`), applies Lustre striping to it (`lfs setstripe`) or CephFS's layout
  (`setfattr -n ceph.dir.layout`) and shows the result (the sanity checks CephFS's);
- writes a ROMIO hints file (`ROMIO_HINTS`; Cray MPICH reads `MPICH_MPIIO_HINTS`) with
  the configured hints (GPFS: `IBM_largeblock_io`);
- prints the real type and mount options of `$fsdir` (findmnt, else stat -f), which the
  sanity compares with the configuration: a mismatch fails with both named.
`fs_alignment` is the configured alignment in bytes (for H5Pset_alignment). Where the
file system is absent (its top directory does not exist here) the test is skipped with
that reason; dry runs are never skipped.
"""

import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, run_after, run_before, variable

from h5checks.fskinds import CEPHFS_LAYOUT, FS_FEATURES, fs_kind, size_bytes  # noqa: F401  (the checks' names)


def mpiio_hints(fs):
    """The MPI-IO hints of a file system: its own, plus what its tuning implies."""
    hints = {k: str(v) for k, v in fs.get("mpiio_hints", {}).items()}
    gpfs = fs.get("gpfs") or {}
    if "largeblock_io" in gpfs:
        hints.setdefault("IBM_largeblock_io", "true" if gpfs["largeblock_io"] else "false")
    lustre = fs.get("lustre") or {}
    if lustre.get("stripe_count", 0) > 0:
        hints.setdefault("striping_factor", str(lustre["stripe_count"]))
    if "stripe_size" in lustre:
        hints.setdefault("striping_unit", str(size_bytes(lustre["stripe_size"])))
    cephfs = fs.get("cephfs") or {}
    if cephfs:
        hints.setdefault("striping_factor", str(cephfs["stripe_count"]))
        hints.setdefault("striping_unit", str(size_bytes(cephfs["stripe_unit"])))
    return hints


def cephfs_layout(fs):
    """The value of ceph.dir.layout for a CephFS's configured layout, in bytes."""
    layout = fs["cephfs"]
    return " ".join(f"{k}={layout[k] if k == 'stripe_count' else size_bytes(layout[k])}" for k in CEPHFS_LAYOUT)


class FileSystemMixin(rfm.RegressionTestPlugin):
    #: the kind of file system this variant writes on
    fs_kind = parameter(list(FS_FEATURES))

    #: the partition's file system in use (its extras entry), set at setup
    fs = variable(dict, value={})

    #: the directory the job writes in (on that file system; shell variables allowed)
    fs_dir = variable(str, value="")

    #: H5Pset_alignment in bytes (0: none), from the file system's `alignment`
    fs_alignment = variable(int, value=0)

    #: the hints file written into the stage directory
    hints_file = "romio-hints"

    @run_after("init")
    def fs_restrict_systems(self):
        self.valid_systems = [f"+{FS_FEATURES[self.fs_kind]}"]

    @run_after("setup")
    def fs_choose(self):
        filesystems = self.current_partition.extras.get("filesystems", [])
        found = [fs for fs in filesystems if fs_kind(fs) == self.fs_kind]
        self.skip_if(
            not found, f"no {self.fs_kind} file system in the extras of {self.current_partition.fullname}"
        )
        self.fs = found[0]
        self.fs_alignment = size_bytes(self.fs["alignment"]) if self.fs.get("alignment") else 0
        top = "/" + os.path.expandvars(self.fs["path"]).strip("/").split("/")[0]
        self.skip_if(
            not self.is_dry_run() and not os.path.isdir(top),
            f"file system {self.fs['name']!r} is absent here: {top} does not exist",
        )
        self.fs_dir = f"{self.fs['path']}/{type(self).__name__}-{self.hashcode}-{self.current_environ.name}"

    @run_before("run")
    def fs_write_hints(self):
        hints = mpiio_hints(self.fs)
        with open(os.path.join(self.stagedir, self.hints_file), "w") as f:
            f.writelines(f"{k} {v}\n" for k, v in sorted(hints.items()))

    def fs_setup_cmds(self, create=True):
        """Shell lines: $fsdir, its creation and tuning, hints, and what the mount really is."""
        cmds = [f'fsdir="{self.fs_dir}"']
        if create:
            cmds += ['mkdir -p "$fsdir" || { echo "fs-error: cannot create $fsdir"; exit 1; }']
            lustre = self.fs.get("lustre")
            if lustre:
                size = lustre.get("stripe_size", "1M")
                cmds += [
                    f'lfs setstripe -c {lustre["stripe_count"]} -S {size} "$fsdir" || '
                    '{ echo "fs-error: lfs setstripe failed on $fsdir"; exit 1; }',
                    'lfs getstripe -d "$fsdir"',
                ]
            if self.fs.get("cephfs"):  # the directory's layout, inherited by every file made in it
                cmds += [
                    f'setfattr -n ceph.dir.layout -v "{cephfs_layout(self.fs)}" "$fsdir" || '
                    '{ echo "fs-error: setfattr ceph.dir.layout failed on $fsdir"; exit 1; }',
                ]
        if self.fs.get("cephfs"):
            cmds += ['echo "fs-layout: $(getfattr --absolute-names --only-values -n ceph.dir.layout "$fsdir")"']
        hints = mpiio_hints(self.fs)
        if hints:
            cmds += [
                f'export ROMIO_HINTS="$PWD/{self.hints_file}"',
                'export MPICH_MPIIO_HINTS="*:' + ":".join(f"{k}={v}" for k, v in sorted(hints.items())) + '"',
            ]
        cmds += [
            'echo "fs-type: $(findmnt -n -o FSTYPE -T "$fsdir" 2>/dev/null || stat -f -c %T "$fsdir")"',
            'echo "fs-options: $(findmnt -n -o OPTIONS -T "$fsdir" 2>/dev/null)"',
        ]
        return cmds

    def fs_sanity(self):
        """Assertions: the directory is on the configured file-system type and mount options."""
        found = sn.extractsingle(r"^fs-type: (\S*)", self.stdout, 1)
        checks = [
            sn.assert_eq(
                found,
                self.fs["type"],
                msg=f"{self.fs['path']} is on a {{0}} file system; the site config says {{1}}",
            )
        ]
        if self.fs.get("cephfs"):  # applied for real: the layout CephFS reports
            layout = sn.extractsingle(r"^fs-layout: (.*)$", self.stdout, 1)
            checks += [
                sn.assert_in(item, sn.evaluate(layout).split(), msg=f"{item} is not in {{1}}: the layout was not applied")
                for item in cephfs_layout(self.fs).split()
            ]
        options = sn.extractsingle(r"^fs-options: (.*)$", self.stdout, 1)
        for option in self.fs.get("mount_options", []):
            checks.append(
                sn.assert_in(
                    option,
                    sn.evaluate(options).split(","),
                    msg=f"mount option {option!r} of {self.fs['path']} is missing (mounted with {{1}})",
                )
            )
        return checks
