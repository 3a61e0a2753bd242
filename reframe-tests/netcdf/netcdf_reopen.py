# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""netCDF-C, unmodified, through multifile: a restarted model run's pattern
(src/nc_reopen.c: nc_create_par, close; nc_open_par read-write, append along the
unlimited dimension, close; nc_open_par read-only, every value against the model) on 2
ranks through HDF5's MPI-IO driver (the reference) and through multifile, which the
driver package's preload library puts under netCDF's own H5Pset_fapl_mpio. The
multifile path is a head beside its directory; `ncdump` of it in place (HDF5_DRIVER=
multifile) prints exactly what `ncdump` of the MPI-IO file prints, and `ncdump` without
the driver says what the file is and how to read it.

Runs on every environment with a parallel netCDF-C (feature `netcdf`: the local 1.14
stacks, a Spack view with `netcdf-c +mpi`) and the multifile package (its preload
library), compiled with the environment's C compiler and `nc-config`.
"""

import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.mpi import launch_command, reference_and_run_sanity  # noqa: E402
from h5checks.nodes import MultiNodeMixin  # noqa: E402

OK = r"^nc_reopen: ok \(2 ranks, 3 steps\)$"


@rfm.simple_test
class netcdf_reopen(MultiNodeMixin, rfm.RegressionTest):
    descr = "netCDF-C: create, reopen and append, read back, through MPI-IO and multifile; ncdump alike"
    valid_systems = ["*"]
    valid_prog_environs = ["+netcdf +hdf5-vfd-multifile"]
    tags = {"netcdf", "multifile", "correctness"}
    num_tasks = 2
    time_limit = "10m"
    sourcesdir = "src"
    build_system = "SingleSource"
    sourcepath = "nc_reopen.c"
    executable = "./nc_reopen"

    @run_before("compile")
    def set_flags(self):
        self.build_system.cflags = ["-O2", "$(nc-config --cflags)"]
        self.build_system.ldflags = ["$(nc-config --libs)", '-Wl,-rpath,"$(nc-config --prefix)/lib"']

    @run_before("run")
    def set_commands(self):
        prefix = self.current_environ.extras["multifile_prefix"]
        # the reference in mpio/, the same file name: ncdump prints it
        self.prerun_cmds = [
            f"mkdir mpio && (cd mpio && {launch_command(self, '../nc_reopen', 'out.nc')})",
            'echo "reference-status: $?"',
        ]
        self.executable = "env"
        self.executable_opts = [f"LD_PRELOAD={prefix}/lib/libh5mf_preload.so", "H5MF_MPIO_DRIVER=multifile",
                                "./nc_reopen", "out.nc"]  # fmt: skip
        self.postrun_cmds = [
            "status=$?",
            'echo "launcher-status: $status"',
            '[ -f out.nc ] && [ -d out.nc.h5mf ] && echo "layout: head beside its directory"',
            # ncdump is no MPI program: the plugin starts MPI in it as a singleton, and Intel
            # MPI doing so inside a Slurm job prints "MPI startup(): PMI server not found ..."
            # on stdout, which is not ncdump's
            "ncdump mpio/out.nc > mpio.cdl && HDF5_DRIVER=multifile ncdump out.nc | grep -v '^MPI startup(): '"
            " > multifile.cdl",
            'cmp mpio.cdl multifile.cdl && echo "ncdump: equal"',
            "ncdump out.nc > plain.cdl 2>&1; cat plain.cdl",
            "exit $status",
        ]

    @sanity_function
    def validate(self):
        return sn.all(
            reference_and_run_sanity(self)
            + [
                sn.assert_eq(sn.count(sn.findall(OK, self.stdout)), 2, msg="a run did not read back every value"),
                sn.assert_found(r"^layout: head beside its directory$", self.stdout,
                                msg="the multifile run left no head and directory: was the driver used?"),
                sn.assert_found(r"^ncdump: equal$", self.stdout, msg="ncdump in place differs from MPI-IO's"),
                sn.assert_found(r"h5mf merge", self.stdout, msg="ncdump without the driver does not say what to do"),
            ]
        )
