# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""HDF5 as Spack's builtin recipe builds it, plus h5stack's multifile variant."""

from spack_repo.builtin.packages.hdf5.package import Hdf5 as BuiltinHdf5

from spack.package import *

# sha256 of the patches, written by `./h5stack patches`. Spack re-reads a repository's
# patch index only when a recipe file changes: this keeps a changed patch from being
# looked up under its old checksum ("Couldn't find patch ... with sha256").
PATCH_SHA256 = {
    "1.14": "710f077a5bf40b53dc0ceddbd585759f5e9ae16aff0f85d3af7c37e1009ff47c",
    "2": "4fbbad3c09a34ce19b1053aa3c2276b10dec900b2e0e4d4f3de0f95a67465da4",
}


class Hdf5(BuiltinHdf5):
    """HDF5 (Spack's builtin recipe: every version and variant) plus the variant
    `multifile`: h5stack's multifile virtual file driver built into libhdf5, with
    the original Uni Hamburg patch's H5Pset_fapl_mpiposix() API. The patches are
    generated from h5stack's packages/hdf5-vfd-multifile (its patches/ folder)."""

    variant(
        "multifile",
        default=False,
        description="Build h5stack's multifile VFD into libhdf5 (H5Pset_fapl_multifile, "
        "H5Pset_fapl_mpiposix, HDF5_DRIVER=multifile)",
    )
    patch("hdf5-1.14-multifile.patch", when="@1.14 +multifile")
    patch("hdf5-2-multifile.patch", when="@2 +multifile")
    conflicts(
        "+multifile", when="@:1.13", msg="the multifile patch exists for HDF5 1.14 and 2.x only"
    )
    conflicts("+multifile", when="~mpi", msg="multifile is a parallel driver: it needs +mpi")


# The builtin recipe has conflicts("+mpi", "^mpich@4.0:4.0.3") without a message (Spack
# commit 448bd31c87, with HDF5 1.14.0: "MPICH 4.0.x versions with bug that causes testphdf5
# test to fail"). Debian 12 ships MPICH 4.0.2, so no parallel HDF5 with Debian's MPICH
# could concretize at all. This overlay drops that one directive; h5stack runs HDF5's own
# parallel tests (testpar/) against Debian's MPICH instead (see spack-repo/README.md).
# There is no public API to remove an inherited directive: the filter works on the
# per-class copy of the directive list and leaves everything else as it is.
Hdf5._directives_to_be_executed["conflicts"] = [
    d
    for d in Hdf5._directives_to_be_executed.get("conflicts", [])
    if not (
        getattr(d, "keywords", {}).get("conflict_spec") == "+mpi"
        and getattr(d, "keywords", {}).get("when") == "^mpich@4.0:4.0.3"
    )
]
