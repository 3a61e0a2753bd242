# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""HDF5 as Spack's builtin recipe builds it, plus h5stack's multifile variant."""

from spack_repo.builtin.packages.hdf5.package import Hdf5 as BuiltinHdf5
from spack_repo.h5stack.build_systems.h5stack import MAINTAINERS

from spack.package import *

#: builtin's conflict for every MPICH 4.0.0-4.0.3, whatever its network module
BUILTIN_MPICH_CONFLICT = ("+mpi", "^mpich@4.0:4.0.3")


class Hdf5(BuiltinHdf5):
    """HDF5 (Spack's builtin recipe: every version and variant) plus the variant
    `multifile`: h5stack's multifile virtual file driver built into libhdf5, with
    the original Uni Hamburg patch's H5Pset_fapl_mpiposix() API. The patches are
    generated from h5stack's packages/hdf5-vfd-multifile (`./h5stack patches`).
    This overlay replaces builtin's hdf5 for every package of the Spack it is added to:
    ~multifile builds exactly as builtin does, apart from the MPICH conflict below."""

    # the 2.x release of h5stack's local stacks (builtin's newest 2.x is 2.1.0): the HDF
    # Group's release tarball, by the checksum that Homebrew's hdf5-mpi formula and a
    # site's build notes give alike (the tarball itself could not be fetched where this
    # recipe was written, so this checksum is not yet checked against its bytes)
    version(
        "2.2.0",
        sha256="1a1ab8209b35586fbc1aa279ba76d102130b95badcb20ca329587219112d8c16",
        url="https://github.com/HDFGroup/hdf5/releases/download/2.2.0/hdf5-2.2.0.tar.gz",
    )

    # the variant exists where a patch was tried: it applies, builds and passes h5stack's
    # tests on HDF5 1.14.6 and on 2.1.0 and 2.2.0 (2.2.0 is a version of h5stack's own
    # stacks, not yet of builtin's recipe)
    variant(
        "multifile",
        default=False,
        when="@1.14.6,2.1.0:2.2.0 +mpi",
        description="Build h5stack's multifile VFD into libhdf5 (H5Pset_fapl_multifile, "
        "H5Pset_fapl_mpiposix, HDF5_DRIVER=multifile)",
    )
    # generated against HDF5 1.14.6: adds src/H5FDmultifile.c and the driver's other
    # sources, lists them in src/CMakeLists.txt, registers the driver by name
    patch("hdf5-1.14-multifile.patch", when="@1.14.6 +multifile")
    # generated against HDF5 2.2.0; applies unchanged to 2.1.0's sources (same files, same
    # anchors), where the patched library builds and passes the mpiposix program
    patch("hdf5-2-multifile.patch", when="@2.1.0:2.2.0 +multifile")

    # MPICH 4.0.0-4.0.3 built with ch4:ofi fails HDF5's testphdf5 (fixed in MPICH 4.1;
    # HDF Group, spack#34734). Builtin's conflict covers every device, which rules out
    # Debian 12's MPICH 4.0.2 (ch4:ucx), whose testphdf5 passes (spack-repo/README.md);
    # this recipe declares the conflict for the affected network module only.
    conflicts(
        "+mpi",
        when="^mpich@4.0:4.0.3 netmod=ofi",
        msg="MPICH 4.0.0-4.0.3 with ch4:ofi fails HDF5's parallel tests (fixed in MPICH 4.1)",
    )


# Maintainers of the overlay are h5stack's, not the HDF Group's (builtin's recipe names
# them; they answer for builtin's hdf5, not for this patch): `maintainers` is a class
# attribute that the directive fills in when the class is made, so it is set after it.
Hdf5.maintainers = sorted(MAINTAINERS)

# Spack has no directive that drops an inherited one. `conflicts` is the class's own
# dictionary ({when: [(spec, message)]}, what the solver and `spack info` read): the
# inherited device-wide entry is taken out of it, and nothing else. Should builtin respell
# its conflict, the filter finds nothing: tests/integration/spack then sees two MPICH conflicts.
_spec, _when = (Spec(s) for s in BUILTIN_MPICH_CONFLICT)
_kept = [c for c in Hdf5.conflicts.get(_when, []) if c[0] != _spec]
if _kept:
    Hdf5.conflicts[_when] = _kept
else:
    Hdf5.conflicts.pop(_when, None)
