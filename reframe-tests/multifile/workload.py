# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""multifile correctness on every stack and file system: the package's workload program
(packages/hdf5-vfd-multifile/tests/mf_workload.c: groups, attributes, contiguous,
chunked and extendible datasets, collective and independent transfers, overwrites
across flushes) written with multifile and, in the same job, with HDF5's MPI-IO driver
as the reference; then read back on another number of ranks.

- multifile_workload_write (4 ranks): the MPI-IO reference, then the multifile file
  with the driver's defaults (a head beside its directory); `h5mf info` and `h5mf verify`.
- multifile_workload_read (3 ranks, depends on its write variant): reads the file in
  place and checks every value, reconstructs it serially (`h5mf merge -o`), then in
  parallel in place (`h5mf merge` under the launcher), and compares both with the
  reference (h5diff).

Both run on every environment with `+multifile` (the plugin package or a patched
HDF5) and on each file-system kind of the partition (FileSystemMixin: striping, hints
and H5Pset_alignment from the site config; the real file-system type is checked).
"""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.udeps as udeps
from reframe.core.builtins import fixture, run_after, run_before, sanity_function

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.filesystems import FileSystemMixin  # noqa: E402
from h5checks.mpi import launch_command, mpi_sanity  # noqa: E402
from h5checks.nodes import MultiNodeMixin  # noqa: E402

PACKAGE_TESTS = os.path.join(
    os.path.dirname(__file__), "..", "..", "packages", "hdf5-vfd-multifile", "tests"
)


class mf_workload_build(rfm.CompileOnlyRegressionTest):
    """mf_workload, compiled with the environment's h5pcc; against the multifile package
    where the environment names it (extras['multifile_prefix']), else a patched HDF5."""

    build_system = "SingleSource"
    sourcesdir = os.path.abspath(PACKAGE_TESTS)
    sourcepath = "mf_workload.c"
    executable = "mf_workload"

    @run_before("compile")
    def set_flags(self):
        self.build_system.cflags = ["-O2", "-Wall"]
        prefix = self.current_environ.extras.get("multifile_prefix")
        if prefix:
            self.build_system.cppflags = [f"-I{prefix}/include"]
            self.build_system.ldflags = [f"-L{prefix}/lib", f"-Wl,-rpath,{prefix}/lib", "-lh5fd_multifile"]

    @sanity_function
    def built(self):
        return sn.assert_not_found(r"error", self.stderr)


class multifile_workload_base(FileSystemMixin, MultiNodeMixin, rfm.RunOnlyRegressionTest):
    valid_prog_environs = ["+hdf5-parallel +multifile"]
    tags = {"multifile", "correctness"}
    time_limit = "10m"
    workload = fixture(mf_workload_build, scope="environment")

    @property
    def program(self):
        return os.path.join(self.workload.stagedir, "mf_workload")


@rfm.simple_test
class multifile_workload_write(multifile_workload_base):
    num_tasks = 4

    @run_after("setup")
    def describe(self):
        self.descr = f"multifile workload on {self.num_tasks} ranks against MPI-IO, on {self.fs.get('name')}"

    @run_before("run")
    def set_commands(self):
        align = ["--alignment", str(self.fs_alignment)] if self.fs_alignment else []
        self.executable = self.program
        self.executable_opts = ['"$fsdir/mf.h5"', "--driver", "multifile"] + align
        self.prerun_cmds = self.fs_setup_cmds() + [
            launch_command(self, self.program, '"$fsdir/ref.h5"', "--driver", "mpio", *align),
            'echo "reference-status: $?"',
        ]
        self.postrun_cmds = [
            "status=$?",
            'echo "launcher-status: $status"',
            'test -f "$fsdir/mf.h5" && test -d "$fsdir/mf.h5.h5mf" && echo "multifile-head: yes"',
            'h5mf info "$fsdir/mf.h5"',
            'h5mf verify "$fsdir/mf.h5" || status=1',
            "exit $status",
        ]

    @sanity_function
    def validate(self):
        return sn.all(
            mpi_sanity(self, expected_lines=2)  # the reference and the multifile run
            + self.fs_sanity()
            + [
                sn.assert_found(r"^reference-status: 0$", self.stdout, msg="the MPI-IO reference run failed"),
                sn.assert_found(r"^launcher-status: 0$", self.stdout, msg="the multifile run failed"),
                sn.assert_eq(sn.count(sn.findall(r"^workload: wrote .* on \d+ ranks with (mpio|multifile): ok$",
                                                 self.stdout)), 2,
                             msg="expected 'workload: wrote ...: ok' from both runs, got {0}"),
                sn.assert_found(r"^multifile-head: yes$", self.stdout,
                                msg="the driver did not write a head beside its directory (the default layout)"),
                sn.assert_found(rf"{self.num_tasks} ranks, complete", self.stdout,
                                msg="h5mf info does not show a complete directory of all ranks"),
                sn.assert_found(r": ok: \d+ ranks", self.stdout, msg="h5mf verify did not pass"),
            ]
            + ([sn.assert_found(rf"^alignment: {self.fs_alignment}$", self.stdout,
                                msg="the program did not apply the alignment")] if self.fs_alignment else [])
        )


@rfm.simple_test
class multifile_workload_read(multifile_workload_base):
    num_tasks = 3

    @run_after("init")
    def depend_on_write(self):
        variant = multifile_workload_write.get_variant_nums(fs_kind=self.fs_kind)[0]
        self.depends_on(multifile_workload_write.variant_name(variant), udeps.by_env)

    @run_after("setup")
    def use_the_written_file(self):
        write = self.getdep(multifile_workload_write.variant_name(
            multifile_workload_write.get_variant_nums(fs_kind=self.fs_kind)[0]))
        self.fs_dir = write.fs_dir
        self.descr = f"multifile read back on {self.num_tasks} ranks (written on {write.num_tasks})"

    @run_before("run")
    def set_commands(self):
        self.executable = self.program
        # the readers that leave the file as it is first, the merge in place last
        self.executable_opts = ['"$fsdir/mf.h5"', "--driver", "multifile", "--check", "--options", "read=inplace"]
        self.prerun_cmds = self.fs_setup_cmds(create=False)
        self.postrun_cmds = [
            "status=$?",
            'echo "launcher-status: $status"',
            'h5mf info "$fsdir/mf.h5" > /dev/null 2>&1 && echo "in-place-kept: yes"',
            'h5mf merge "$fsdir/mf.h5" -o "$fsdir/serial.h5" -q || status=1',
            'h5diff "$fsdir/ref.h5" "$fsdir/serial.h5"; echo "h5diff-serial: $?"',
            launch_command(self, "h5mf", "merge", '"$fsdir/mf.h5"', "-q") + ' || status=1',
            'test -f "$fsdir/mf.h5" && ! test -e "$fsdir/mf.h5.h5mf" && echo "parallel-merge: file"',
            'h5diff "$fsdir/ref.h5" "$fsdir/mf.h5"; echo "h5diff-parallel: $?"',
            'rm -rf "$fsdir"',
            "exit $status",
        ]

    @sanity_function
    def validate(self):
        return sn.all(
            mpi_sanity(self, expected_lines=1)
            + self.fs_sanity()
            + [
                sn.assert_found(r"^launcher-status: 0$", self.stdout, msg="the in-place read failed"),
                sn.assert_found(r"^workload: checked .*: ok$", self.stdout,
                                msg="the in-place read did not check out"),
                sn.assert_found(r"^in-place-kept: yes$", self.stdout,
                                msg="reading in place did not leave the multifile file"),
                sn.assert_found(r"^parallel-merge: file$", self.stdout,
                                msg="parallel h5mf merge did not replace the multifile file by an ordinary one"),
                sn.assert_found(r"^h5diff-parallel: 0$", self.stdout,
                                msg="the parallel reconstruction differs from the MPI-IO reference"),
                sn.assert_found(r"^h5diff-serial: 0$", self.stdout,
                                msg="the serial reconstruction differs from the MPI-IO reference"),
            ]
        )
