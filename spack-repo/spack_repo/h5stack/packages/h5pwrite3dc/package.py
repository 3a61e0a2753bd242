# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
from spack_repo.h5stack.build_systems.h5stack import H5stackPackage

from spack.package import *


class H5pwrite3dc(H5stackPackage):
    """h5pwrite3dc: an image-series benchmark for parallel HDF5 after MAX IV's
    hdf_pwrite3dc. MPI ranks write series of 2-D detector images as chunked 3-D
    datasets (collective or independent; MPI-IO, subfiling or a driver plugin such as
    multifile), print the original's timings and rates, and measure raw MPI-IO and
    POSIX writes of the same bytes in the same run."""

    root_cmakelists_dir = "packages/h5pwrite3dc"

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
