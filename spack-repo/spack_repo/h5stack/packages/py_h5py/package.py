# Copyright h5stack developers. SPDX-License-Identifier: (Apache-2.0 OR MIT)
"""h5py as Spack's builtin recipe builds it, with HDF5 2.x allowed where h5stack builds
and tests that h5py on it."""

from spack_repo.builtin.packages.py_h5py.package import PyH5py as BuiltinPyH5py
from spack_repo.h5stack.build_systems.h5stack import MAINTAINERS

from spack.dependency import Dependency
from spack.package import *

#: builtin's HDF5 range of h5py 3.15 and later, and h5stack's: h5py 3.16.0 builds against
#: HDF5 2.2.0 (the local stacks of stacks.yaml) and passes h5stack's h5py tests there
BUILTIN_HDF5 = ("@3.15:", "hdf5@1.10.7:1.14 +hl")
WITH_HDF5_2 = "hdf5@1.10.7:1.14,2.1:2.2 +hl"


class PyH5py(BuiltinPyH5py):
    """h5py (Spack's builtin recipe: every version and variant), with HDF5 2.1 and 2.2
    allowed from h5py 3.15 on. This overlay replaces builtin's py-h5py for every
    package of the Spack it is added to; with HDF5 1.x it builds exactly as builtin's."""


PyH5py.maintainers = sorted(MAINTAINERS)

# Spack has no directive that widens an inherited dependency (a second depends_on
# intersects the two). `dependencies` is the class's own dictionary ({when: {name:
# Dependency}}): builtin's HDF5 entry for h5py 3.15+ is replaced by the wider range, and
# nothing else. Should builtin change that entry, the range below is not installed and
# tests/integration/spack sees the HDF5 2.x environments fail to concretize.
_when = Spec(BUILTIN_HDF5[0])
_deps = dict(PyH5py.dependencies.get(_when, {}))
if "hdf5" in _deps and _deps["hdf5"].spec == Spec(BUILTIN_HDF5[1]):
    _deps["hdf5"] = Dependency(PyH5py, Spec(WITH_HDF5_2), depflag=_deps["hdf5"].depflag)
    PyH5py.dependencies[_when] = _deps
