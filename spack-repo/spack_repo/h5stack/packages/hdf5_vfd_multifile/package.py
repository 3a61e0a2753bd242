# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
import os

from spack_repo.builtin.build_systems.cmake import CMakePackage

from spack.package import *

# the h5stack checkout this repository lives in (spack-repo/spack_repo/h5stack/packages/<pkg>/)
H5STACK_ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 5))


class Hdf5VfdMultifile(CMakePackage):
    """The multifile virtual file driver for parallel HDF5 1.14 and 2.x: one logical HDF5
    file, written as one append-only data file and one offset index per MPI rank in a
    directory, reconstructed into an ordinary HDF5 file when opened for reading. A linked
    library (H5Pset_fapl_multifile), an HDF5 plugin (HDF5_DRIVER=multifile), the h5mf
    tool (info, verify, merge) and the h5mf-bench benchmark."""

    # `main` is the checkout that holds this recipe (no network needed); for working-tree
    # builds use `spack develop` (see spack-repo/README.md)
    git = f"file://{H5STACK_ROOT}"

    license("Apache-2.0 OR MIT")

    version("main", branch="main")

    variant(
        "isal", default=True, description="CRC-32C of the data with ISA-L (else a portable CRC)"
    )

    depends_on("c", type="build")
    depends_on("cmake@3.20:", type="build")
    depends_on("mpi")
    depends_on("hdf5@1.14: +mpi")
    depends_on("zlib-api")
    depends_on("isa-l", when="+isal")

    root_cmakelists_dir = "packages/hdf5-vfd-multifile"

    def cmake_args(self):
        return [
            self.define("CMAKE_C_COMPILER", self.spec["mpi"].mpicc),
            self.define("MPIEXEC_EXECUTABLE", self.spec["mpi"].prefix.bin.mpiexec),
            self.define("BUILD_TESTING", self.run_tests),
        ]

    def setup_run_environment(self, env):
        env.prepend_path("HDF5_PLUGIN_PATH", self.prefix.lib.plugin)

    @run_after("install")
    def cache_test_sources(self):
        cache_extra_test_sources(
            self, [join_path(self.root_cmakelists_dir, "tests", "mf_workload.c")]
        )

    def _mpiexec(self, *args):
        """mpiexec of the MPI in use; Open MPI also as root (Spack's test environment drops
        every *_ROOT variable, OMPI_ALLOW_RUN_AS_ROOT included) and on fewer cores"""
        mpiexec = which(self.spec["mpi"].prefix.bin.mpiexec, required=True)
        if self.spec.satisfies("^openmpi"):
            mpiexec.add_default_arg("--oversubscribe")
            if os.geteuid() == 0:
                mpiexec.add_default_arg("--allow-run-as-root")
        return mpiexec

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
        assert os.path.isdir("mf.h5"), "mf.h5 is not a multifile directory"
        which(self.prefix.bin.h5mf, required=True)("merge", "mf.h5", "-q")
        assert os.path.isfile("mf.h5"), "h5mf merge did not replace the directory"
        which(self.spec["hdf5"].prefix.bin.h5diff, required=True)("ref.h5", "mf.h5")
