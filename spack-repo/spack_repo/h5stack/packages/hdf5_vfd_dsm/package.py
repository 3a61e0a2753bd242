# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
import os

from spack_repo.builtin.build_systems.cmake import CMakePackage

from spack.package import *

# the h5stack checkout this repository lives in (spack-repo/spack_repo/h5stack/packages/<pkg>/)
H5STACK_ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 5))


class Hdf5VfdDsm(CMakePackage):
    """The DSM virtual file driver for parallel HDF5 1.14 and 2.x: HDF5 files held in
    the memory of server ranks (distributed shared memory) and written by client ranks
    with MPI one-sided transfers, with linear, block-cyclic and random-block address
    distributions (after H5FDdsm, Soumagne, Biddiscombe, Esnard, EuroMPI 2011). A linked
    library (H5Pset_fapl_dsm) with a host API, an HDF5 plugin (HDF5_DRIVER=dsm), the
    h5dsm-server program, the h5dsm-workload example client and the h5dsm-bench
    benchmark."""

    # `main` is the checkout that holds this recipe (no network needed); for working-tree
    # builds use `spack develop` (see spack-repo/README.md)
    git = f"file://{H5STACK_ROOT}"

    license("Apache-2.0 OR MIT")

    version("main", branch="main")

    depends_on("c", type="build")
    depends_on("cmake@3.20:", type="build")
    depends_on("mpi")
    depends_on("hdf5@1.14: +mpi")

    root_cmakelists_dir = "packages/hdf5-vfd-dsm"

    def cmake_args(self):
        return [
            self.define("CMAKE_C_COMPILER", self.spec["mpi"].mpicc),
            self.define("MPIEXEC_EXECUTABLE", self.spec["mpi"].prefix.bin.mpiexec),
            self.define("BUILD_TESTING", self.run_tests),
        ]

    def setup_build_environment(self, env):
        # the build-time tests (--test) start Open MPI's mpiexec through ctest, without
        # its options: on fewer cores, and as root (Spack's build environment drops every
        # *_ROOT variable, OMPI_ALLOW_RUN_AS_ROOT included)
        if self.run_tests and self.spec.satisfies("^openmpi"):
            env.set("OMPI_MCA_rmaps_base_oversubscribe", "1")
            if os.geteuid() == 0:
                env.set("OMPI_ALLOW_RUN_AS_ROOT", "1")
                env.set("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")

    def setup_run_environment(self, env):
        env.prepend_path("HDF5_PLUGIN_PATH", self.prefix.lib.plugin)

    def _mpiexec(self):
        """mpiexec of the MPI in use; Open MPI also as root (Spack's test environment drops
        every *_ROOT variable, OMPI_ALLOW_RUN_AS_ROOT included) and on fewer cores"""
        mpiexec = which(self.spec["mpi"].prefix.bin.mpiexec, required=True)
        if self.spec.satisfies("^openmpi"):
            mpiexec.add_default_arg("--oversubscribe")
            if os.geteuid() == 0:
                mpiexec.add_default_arg("--allow-run-as-root")
        return mpiexec

    def test_bad_distribution(self):
        """an unknown distribution is refused at server start with the reason"""
        mpiexec = self._mpiexec()
        server = self.prefix.bin.join("h5dsm-server")
        out = mpiexec(
            "-n", "1", server, "--size", "1m", "--distribution", "cyclic",
            output=str, error=str, fail_on_error=False,
        )  # fmt: skip
        assert mpiexec.returncode != 0, "an unknown distribution was accepted"
        assert "unknown distribution 'cyclic'" in out, out

    def test_mpmd_roundtrip_h5diff(self):
        """1 server, 2 clients: two files through the DSM equal the same files by MPI-IO"""
        mpiexec = self._mpiexec()
        server = self.prefix.bin.join("h5dsm-server")
        workload = self.prefix.bin.join("h5dsm-workload")
        mpiexec("-n", "2", workload, "mpio", "ref_{step}.h5", "2", output=str, error=str)
        out = mpiexec(
            "-n", "1", server, "--size", "4m", "--distribution", "block-cyclic:4k",
            "--action", "dump:dump_{step}.h5",
            ":", "-n", "2", workload, "mpmd", "mem_{step}.h5", "2", "--verify",
            output=str, error=str,
        )  # fmt: skip
        assert "workload: ok (2 files, 2 ranks, verified)" in out, out
        h5diff = which(self.spec["hdf5"].prefix.bin.h5diff, required=True)
        for step in range(2):
            h5diff(f"ref_{step}.h5", f"dump_{step}.h5")
