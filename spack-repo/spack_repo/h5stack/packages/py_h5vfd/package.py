# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
from spack_repo.builtin.build_systems.python import PythonPackage
from spack_repo.h5stack.build_systems.h5stack import GIT, HOMEPAGE, MAINTAINERS, h5stack_versions

from spack.package import *


class PyH5vfd(PythonPackage):
    """h5stack's HDF5 drivers from h5py: `h5py.File(..., driver="multifile")` and
    `driver="dsm"` through the stack's plugins, and h5mf's info, verify and merge as
    functions (h5stack's python/ directory)."""

    homepage = HOMEPAGE
    git = GIT
    maintainers(*MAINTAINERS)
    license("BSD-3-Clause")

    h5stack_versions()

    build_directory = "python"

    depends_on("python@3.9:", type=("build", "run"))
    depends_on("py-setuptools@61:", type="build")
    # the drivers are loaded into the h5py that runs: h5py with MPI, the stack's HDF5
    depends_on("py-h5py +mpi", type=("build", "run"))
    depends_on("py-mpi4py", type=("build", "run"))
    # the plugins (HDF5_PLUGIN_PATH) and h5mf, against the same HDF5 and MPI as h5py
    depends_on("hdf5-vfd-multifile", type="run")
    depends_on("hdf5-vfd-dsm", type="run")

    def test_import(self):
        """h5vfd imports and names its drivers"""
        python = which(self.spec["python"].command.path, required=True)
        out = python("-c", "import h5vfd; print(sorted(h5vfd.DRIVERS))", output=str, error=str)
        assert "multifile" in out, out
