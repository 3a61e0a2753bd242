# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
import os

from spack_repo.builtin.build_systems.cmake import CMakePackage

from spack.package import *

# the h5stack checkout this repository lives in (spack-repo/spack_repo/h5stack/packages/<pkg>/)
H5STACK_ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 5))


class H5pwrite3dc(CMakePackage):
    """h5pwrite3dc: an image-series benchmark for parallel HDF5 after MAX IV's
    hdf_pwrite3dc. MPI ranks write series of 2-D detector images as chunked 3-D
    datasets (collective or independent; MPI-IO, subfiling or a driver plugin such as
    multifile), print the original's timings and rates, and measure raw MPI-IO and
    POSIX writes of the same bytes in the same run."""

    # `main` is the checkout that holds this recipe (no network needed); for working-tree
    # builds use `spack develop` (see spack-repo/README.md)
    git = f"file://{H5STACK_ROOT}"

    license("Apache-2.0 OR MIT")

    version("main", branch="main")

    depends_on("c", type="build")
    depends_on("cmake@3.20:", type="build")
    depends_on("mpi")
    depends_on("hdf5@1.14: +mpi")

    root_cmakelists_dir = "packages/h5pwrite3dc"

    def cmake_args(self):
        return [
            self.define("CMAKE_C_COMPILER", self.spec["mpi"].mpicc),
            self.define("MPIEXEC_EXECUTABLE", self.spec["mpi"].prefix.bin.mpiexec),
            self.define("BUILD_TESTING", self.run_tests),
        ]

    def _mpiexec(self):
        """mpiexec of the MPI in use; Open MPI also as root (Spack's test environment drops
        every *_ROOT variable, OMPI_ALLOW_RUN_AS_ROOT included) and on fewer cores"""
        mpiexec = which(self.spec["mpi"].prefix.bin.mpiexec, required=True)
        if self.spec.satisfies("^openmpi"):
            mpiexec.add_default_arg("--oversubscribe")
            if os.geteuid() == 0:
                mpiexec.add_default_arg("--allow-run-as-root")
        return mpiexec

    def test_bad_arguments(self):
        """the original's constraints are refused with its message and a non-zero exit"""
        h5pwrite3dc = which(self.prefix.bin.h5pwrite3dc, required=True)
        out = h5pwrite3dc("f.h5", "10", "4", output=str, error=str, fail_on_error=False)
        assert h5pwrite3dc.returncode != 0, "NSETS not divisible by NDSETS was accepted"
        assert "Must use divisible number of hdf5 datasets" in out, out

    def test_write_verify_h5dump(self):
        """2 ranks write 8 images into 2 datasets and read them back; h5dump sees who wrote what"""
        mpiexec = self._mpiexec()
        out = mpiexec(
            "-n", "2", self.prefix.bin.h5pwrite3dc, "f.h5", "8", "2",
            "--size", "64", "--chunk", "32", "--verify", "--quiet",
            output=str, error=str,
        )  # fmt: skip
        assert "verify: ok, 32768 pixels" in out, out
        assert "ratio rate(write)/mpiio:" in out, out
        h5dump = which(self.spec["hdf5"].prefix.bin.h5dump, required=True)
        dump = h5dump("-d", "/data_0001", "-s", "3,10,10", "-c", "1,1,1", "f.h5", output=str)
        assert "(3,10,10): 1" in dump, dump
