# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""netCDF-C as Spack's builtin recipe builds it, with the release h5stack builds and
tests its drivers with."""

from spack_repo.builtin.packages.netcdf_c.package import NetcdfC as BuiltinNetcdfC
from spack_repo.h5stack.build_systems.h5stack import MAINTAINERS

from spack.package import *


class NetcdfC(BuiltinNetcdfC):
    """netCDF-C (Spack's builtin recipe: every version and variant) plus 4.10.1, the
    release of h5stack's local stacks (stacks.yaml `netcdf_builds`), whose parallel
    netCDF-4 h5stack tests through its drivers. This overlay replaces builtin's
    netcdf-c for every package of the Spack it is added to; other versions build
    exactly as builtin's."""

    # GitHub's archive of the tag v4.10.1 (git archive): the bytes of Debian's
    # netcdf_4.10.1.orig.tar.gz, which h5stack's local stacks build from
    version("4.10.1", sha256="33c27231c478c3b35da7c7758fbdd02da1fe407abcb16ddfe195f69d164f930d")


# the overlay's maintainers are h5stack's (builtin's answer for builtin's recipe), set
# after the class is made, as for hdf5
NetcdfC.maintainers = sorted(MAINTAINERS)
