# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""The base of h5stack's own recipes (hdf5-vfd-multifile, hdf5-vfd-dsm, h5pwrite3dc):
CMake projects under packages/ of the h5stack source, built against a parallel HDF5
and tested with MPI launches; and the versions that py-h5vfd (python/) shares with them.
Where the source comes from is said once, here."""

import os
import shlex

from spack_repo.builtin.build_systems.cmake import CMakePackage

from spack.package import (
    EnvironmentModifications,
    Executable,
    InstallError,
    depends_on,
    license,
    maintainers,
    version,
    which,
)

#: h5stack's public repository. A fork or a site mirror changes it here, or without
#: editing the recipes, per package in packages.yaml (see spack-repo/README.md):
#:   hdf5-vfd-multifile: {package_attributes: {git: "https://example.org/fork/h5stack.git"}}
HOMEPAGE = "https://github.com/h5stack/h5stack"
GIT = f"{HOMEPAGE}.git"
#: GitHub accounts that answer for the recipes (Spack pings them on changes)
MAINTAINERS = ("h5stack",)


def h5stack_versions():
    """The versions of every recipe of h5stack's source; called in a recipe's class body
    (a directive called there belongs to the class being made)."""
    # development: the newest commit of main (for a working tree: `spack develop`)
    version("main", branch="main")
    # releases: commits of the public repository
    version("0.2.11", commit="2a0b65045763143f92dc0d056c6e9cfc95484d1b")


class H5stackPackage(CMakePackage):
    """A CMake project of the h5stack source (``root_cmakelists_dir`` is its directory,
    e.g. ``packages/hdf5-vfd-dsm``) for parallel HDF5 1.14 and 2.x. CMake finds MPI
    through ``MPI_C_COMPILER`` (FindMPI) and runs its MPI tests (``--test``) with the
    MPI's launcher; stand-alone tests launch with :meth:`_mpiexec`."""

    homepage = HOMEPAGE
    git = GIT

    maintainers(*MAINTAINERS)

    license("BSD-3-Clause")

    h5stack_versions()

    depends_on("c", type="build")
    depends_on("cmake@3.20:", type="build")
    depends_on("mpi")
    depends_on("hdf5@1.14: +mpi")

    def cmake_args(self):
        args = [
            self.define("MPI_C_COMPILER", self.spec["mpi"].mpicc),
            self.define("BUILD_TESTING", self.run_tests),
        ]
        if self.run_tests:  # the launcher of ctest's MPI tests, needed by --test only
            args.append(self.define("MPIEXEC_EXECUTABLE", self._mpiexec_path()))
        return args

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
        """The MPI's launcher, after builtin's CachedCMakePackage: the provider package's own
        ``mpiexec`` (intel-oneapi-mpi); ``srun`` inside a Slurm allocation; else ``mpirun``
        or ``mpiexec`` in the MPI's prefix; else ``srun`` on PATH (Cray MPICH)."""
        mpi = self.spec["mpi"]
        own = getattr(mpi.package, "mpiexec", None)
        if own:
            return str(own)
        srun = which("srun")
        if srun and os.environ.get("SLURM_JOB_ID"):
            return srun.path
        for name in ("mpirun", "mpiexec"):
            if os.path.exists(mpi.prefix.bin.join(name)):
                return mpi.prefix.bin.join(name)
        if srun:
            return srun.path
        raise InstallError(
            f"no MPI launcher for {mpi.name}: no mpirun or mpiexec in {mpi.prefix.bin}, "
            "no srun on PATH"
        )

    def _mpiexec(self) -> Executable:
        """The MPI's launcher for stand-alone tests; Open MPI's also as root (Spack's test
        environment drops every *_ROOT variable, OMPI_ALLOW_RUN_AS_ROOT included) and on
        fewer cores"""
        mpiexec = which(self._mpiexec_path(), required=True)
        if self.spec.satisfies("^openmpi") and not _is_srun(mpiexec):
            mpiexec.add_default_arg("--oversubscribe")
            if os.geteuid() == 0:
                mpiexec.add_default_arg("--allow-run-as-root")
        return mpiexec

    @staticmethod
    def _mpmd(mpiexec: Executable, *programs) -> list:
        """The arguments of `mpiexec` (from :meth:`_mpiexec`) for one MPMD job of (ranks,
        argv) programs: ``-n 1 a : -n 2 b``, or a ``--multi-prog`` file for srun."""
        if not _is_srun(mpiexec):
            args = []
            for ranks, argv in programs:
                args += ([":"] if args else []) + ["-n", str(ranks), *argv]
            return args
        lines, first = [], 0
        for ranks, argv in programs:
            if ranks < 1 or any("%" in a for a in argv):
                raise InstallError(f"cannot write {argv} for srun --multi-prog ({ranks} ranks)")
            lines.append(f"{first}-{first + ranks - 1} {' '.join(shlex.quote(a) for a in argv)}")
            first += ranks
        with open("mpmd.conf", "w") as f:
            f.write("\n".join(lines) + "\n")
        return ["-n", str(first), "--multi-prog", "mpmd.conf"]


def _is_srun(launcher: Executable) -> bool:
    return os.path.basename(launcher.path) == "srun"
