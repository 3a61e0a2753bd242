# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
import os

from spack_repo.h5stack.build_systems.h5stack import H5stackPackage

from spack.package import *


class Hdf5VfdMultifile(H5stackPackage):
    """The multifile virtual file driver for parallel HDF5 1.14 and 2.x: one logical HDF5
    file, written as one append-only data file and one offset index per MPI rank in a
    directory, reconstructed into an ordinary HDF5 file when opened for reading. A linked
    library (H5Pset_fapl_multifile), an HDF5 plugin (HDF5_DRIVER=multifile), the h5mf
    tool (info, verify, merge) and the h5mf-bench benchmark."""

    # test_write_merge_h5diff compiles a workload against the installed library
    test_requires_compiler = True

    variant(
        "isal", default=True, description="CRC-32C of the data with ISA-L (else a portable CRC)"
    )

    depends_on("zlib-api")
    depends_on("isa-l", when="+isal")

    root_cmakelists_dir = "packages/hdf5-vfd-multifile"

    def cmake_args(self):
        return super().cmake_args() + [
            # ON: ISA-L required; OFF: never used, even where the system has it
            self.define("H5MF_WITH_ISAL", "ON" if self.spec.satisfies("+isal") else "OFF")
        ]

    def setup_run_environment(self, env: EnvironmentModifications) -> None:
        env.prepend_path("HDF5_PLUGIN_PATH", self.prefix.lib.plugin)

    @run_after("install")
    def cache_test_sources(self):
        cache_extra_test_sources(
            self, [join_path(self.root_cmakelists_dir, "tests", "mf_workload.c")]
        )

    def test_h5mf(self):
        """h5mf runs and explains itself"""
        h5mf = which(self.prefix.bin.h5mf, required=True)
        out = h5mf("--help", output=str.split, error=str.split)
        assert "merge" in out, out

    def test_write_merge_h5diff(self):
        """2 ranks write a workload with multifile and with MPI-IO; h5mf merges; h5diff equal"""
        src = join_path(
            self.test_suite.current_test_cache_dir,
            self.root_cmakelists_dir,
            "tests",
            "mf_workload.c",
        )
        mpicc = which(self.spec["mpi"].mpicc, required=True)
        mpicc(
            src,
            "-o",
            "mf_workload",
            f"-I{self.prefix.include}",
            f"-I{self.spec['hdf5'].prefix.include}",
            f"-L{self.prefix.lib}",
            f"-L{self.spec['hdf5'].prefix.lib}",
            f"-Wl,-rpath,{self.prefix.lib}",
            f"-Wl,-rpath,{self.spec['hdf5'].prefix.lib}",
            "-lh5fd_multifile",
            "-lhdf5",
        )
        mpiexec = self._mpiexec()
        mpiexec("-n", "2", "./mf_workload", "ref.h5", "--driver", "mpio")
        mpiexec("-n", "2", "./mf_workload", "mf.h5", "--driver", "multifile")
        # the default layout: a head mf.h5 beside its directory mf.h5.h5mf
        assert os.path.isfile("mf.h5") and os.path.isdir("mf.h5.h5mf"), "no head mf.h5 beside mf.h5.h5mf/"
        which(self.prefix.bin.h5mf, required=True)("merge", "mf.h5", "-q")
        assert os.path.isfile("mf.h5") and not os.path.exists("mf.h5.h5mf"), "h5mf merge left mf.h5.h5mf/"
        which(self.spec["hdf5"].prefix.bin.h5diff, required=True)("ref.h5", "mf.h5")
