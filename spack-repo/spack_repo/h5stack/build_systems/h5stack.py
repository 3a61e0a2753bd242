# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""The base of h5stack's own recipes (hdf5-vfd-multifile, hdf5-vfd-dsm, h5pwrite3dc):
CMake projects under packages/ of the h5stack checkout that holds this repository,
built against a parallel HDF5 and tested with MPI launches."""

import os

from spack_repo.builtin.build_systems.cmake import CMakePackage

from spack.package import EnvironmentModifications, Executable, depends_on, license, version, which

#: the h5stack checkout this repository lives in (spack-repo/spack_repo/h5stack/build_systems/)
H5STACK_ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))


class H5stackPackage(CMakePackage):
    """A CMake project of the h5stack checkout (``root_cmakelists_dir`` is its directory,
    e.g. ``packages/hdf5-vfd-dsm``) for parallel HDF5 1.14 and 2.x. CMake finds MPI
    through ``MPI_C_COMPILER`` (FindMPI) and runs its MPI tests (``--test``) with the
    MPI's launcher; stand-alone tests launch with :meth:`_mpiexec`."""

    # `main` is the checkout that holds this repository (no network needed); for
    # working-tree builds use `spack develop` (see spack-repo/README.md)
    git = f"file://{H5STACK_ROOT}"

    license("Apache-2.0 OR MIT")

    version("main", branch="main")

    depends_on("c", type="build")
    depends_on("cmake@3.20:", type="build")
    depends_on("mpi")
    depends_on("hdf5@1.14: +mpi")

    def cmake_args(self):
        return [
            self.define("MPI_C_COMPILER", self.spec["mpi"].mpicc),
            self.define("MPIEXEC_EXECUTABLE", self._mpiexec_path()),
            self.define("BUILD_TESTING", self.run_tests),
        ]

    def setup_build_environment(self, env: EnvironmentModifications) -> None:
        # the build-time tests (--test) start Open MPI's mpiexec through ctest, without
        # its options: on fewer cores, and as root (Spack's build environment drops every
        # *_ROOT variable, OMPI_ALLOW_RUN_AS_ROOT included)
        if self.run_tests and self.spec.satisfies("^openmpi"):
            env.set("OMPI_MCA_rmaps_base_oversubscribe", "1")
            if os.geteuid() == 0:
                env.set("OMPI_ALLOW_RUN_AS_ROOT", "1")
                env.set("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")

    def _mpiexec_path(self) -> str:
        """The MPI's launcher, looked up as builtin's CachedCMakePackage does: the provider
        package's ``mpiexec`` where it defines one (intel-oneapi-mpi), else the spec's
        (set by a provider's setup_dependent_package), else ``<prefix>/bin/mpiexec``
        (mpich, openmpi and most providers define neither)."""
        mpi = self.spec["mpi"]
        return (
            getattr(mpi.package, "mpiexec", None)
            or getattr(mpi, "mpiexec", None)
            or mpi.prefix.bin.mpiexec
        )

    def _mpiexec(self) -> Executable:
        """The MPI's launcher for stand-alone tests; Open MPI's also as root (Spack's test
        environment drops every *_ROOT variable, OMPI_ALLOW_RUN_AS_ROOT included) and on
        fewer cores"""
        mpiexec = which(self._mpiexec_path(), required=True)
        if self.spec.satisfies("^openmpi"):
            mpiexec.add_default_arg("--oversubscribe")
            if os.geteuid() == 0:
                mpiexec.add_default_arg("--allow-run-as-root")
        return mpiexec
