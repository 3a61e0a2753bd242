# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""netCDF-C as Spack's builtin recipe builds it, with the release h5stack builds and
tests its drivers with."""

from spack_repo.builtin.packages.netcdf_c import package as builtin
from spack_repo.h5stack.build_systems.h5stack import MAINTAINERS

from spack.package import *


class NetcdfC(builtin.NetcdfC):
    """netCDF-C (Spack's builtin recipe: every version and variant) plus 4.10.1, the
    release of h5stack's local stacks (stacks.yaml `netcdf_builds`), whose parallel
    netCDF-4 h5stack tests through its drivers. This overlay replaces builtin's
    netcdf-c for every package of the Spack it is added to; other versions build
    exactly as builtin's, but for the MPI handle conversions below."""

    # GitHub's archive of the tag v4.10.1 (git archive): the bytes of Debian's
    # netcdf_4.10.1.orig.tar.gz, which h5stack's local stacks build from
    version("4.10.1", sha256="33c27231c478c3b35da7c7758fbdd02da1fe407abcb16ddfe195f69d164f930d")


class AutotoolsBuilder(builtin.AutotoolsBuilder):
    def configure_args(self):
        args = super().configure_args()
        if self.spec.satisfies("+mpi"):
            # configure looks for MPI_Comm_f2c and MPI_Info_f2c as library symbols; MPICH
            # and its derivatives define them as macros in mpi.h (an MPI library must have
            # them, as functions or macros), and with the check failing a 64-bit build
            # stops at dparallel.c's '#error "MPI_Comm_f2c unavailable on a 64-bit system"'
            args += ["ac_cv_func_MPI_Comm_f2c=yes", "ac_cv_func_MPI_Info_f2c=yes"]
        return args


# the overlay's maintainers are h5stack's (builtin's answer for builtin's recipe), set
# after the class is made, as for hdf5
NetcdfC.maintainers = sorted(MAINTAINERS)
