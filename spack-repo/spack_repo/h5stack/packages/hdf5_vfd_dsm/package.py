# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
from spack_repo.h5stack.build_systems.h5stack import H5stackPackage

from spack.package import *


class Hdf5VfdDsm(H5stackPackage):
    """The DSM virtual file driver for parallel HDF5 1.14 and 2.x: HDF5 files held in
    the memory of server ranks (distributed shared memory) and written by client ranks
    with MPI one-sided transfers, with linear, block-cyclic and random-block address
    distributions (after H5FDdsm, Soumagne, Biddiscombe, Esnard, EuroMPI 2011). A linked
    library (H5Pset_fapl_dsm) with a host API, an HDF5 plugin (HDF5_DRIVER=dsm), the
    h5dsm-server program, the h5dsm-workload example client and the h5dsm-bench
    benchmark."""

    root_cmakelists_dir = "packages/hdf5-vfd-dsm"

    def setup_run_environment(self, env: EnvironmentModifications) -> None:
        env.prepend_path("HDF5_PLUGIN_PATH", self.prefix.lib.plugin)

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
        dsm = ["--size", "4m", "--distribution", "block-cyclic:4k"]
        job = self._mpmd(
            mpiexec,
            (1, [server, *dsm, "--action", "dump:dump_{step}.h5"]),
            (2, [workload, "mpmd", "mem_{step}.h5", "2", "--verify"]),
        )
        out = mpiexec(*job, output=str, error=str)
        assert "workload: ok (2 files, 2 ranks, verified)" in out, out
        h5diff = which(self.spec["hdf5"].prefix.bin.h5diff, required=True)
        for step in range(2):
            h5diff(f"ref_{step}.h5", f"dump_{step}.h5")
