# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`h5stack patches`: the HDF5 patches that build the multifile driver into libhdf5.

hdf5-<series>-multifile.patch, beside the Spack recipe of `hdf5`
(spack-repo/spack_repo/h5stack/packages/hdf5/, paths.PATCHES_DIR: Spack needs a
recipe's patches beside its package.py, so spack-repo/ works copied on its own; the
local twins of stacks.yaml apply the same files), is generated, never edited: it is the
difference between HDF5's pristine source (the stack's source for that series) and
the same tree with
  - packages/hdf5-vfd-multifile/src/*, include/H5FDmultifile.h and the C shared by
    the drivers (packages/vfd-common/*.c, *.h) copied into src/
    (every .c wrapped in `#ifdef H5_HAVE_PARALLEL`, with H5_MULTIFILE_BUILTIN defined
    so the plugin entry points stay out of libhdf5, and H5STACK_VERSION from VERSION,
    as the package's CMake defines it),
  - those sources and the public header listed in src/CMakeLists.txt, which refuses a
    parallel build without zlib (the driver's metadata checksums are zlib's crc32),
  - H5FDmultifile.h included by hdf5.h (H5Pset_fapl_multifile, H5Pset_fapl_mpiposix),
  - "multifile" and "mpiposix" known to H5FD_register_driver_by_name, which serves
    H5Pset_driver_by_name and HDF5_DRIVER (no plugin needed).
The same command writes h5vfd's C constants (stacks/pyconstants.py), also generated
from packages/. `--check` regenerates them in memory and fails when a committed patch
or the constants are stale.
"""

import difflib
import glob
import os
import shutil
import tempfile

from h5stack.base import generated, paths
from h5stack.base.ui import StepError

HEADER = "/* Generated from packages/hdf5-vfd-multifile by `./h5stack patches`: edit it there. */\n"


def patch_name(series):
    return f"hdf5-{series}-multifile.patch"


def _insert_after(text, anchor, addition, what):
    i = text.find(anchor)
    if i < 0:
        raise StepError(f"{what}: cannot find {anchor.strip()!r} to patch")
    j = text.index("\n", i) + 1
    return text[:j] + addition + text[j:]


def _insert_before(text, anchor, addition, what):
    i = text.find(anchor)
    if i < 0:
        raise StepError(f"{what}: cannot find {anchor.strip()!r} to patch")
    return text[:i] + addition + text[i:]


#: what of h5stack the patches are made from (besides HDF5's tree), relative to the
#: checkout: the driver's C sources, its headers, h5stack's version
INPUT_SOURCES = ("packages/hdf5-vfd-multifile/src/*.c", "packages/vfd-common/*.c")
INPUT_HEADERS = (
    "packages/hdf5-vfd-multifile/src/*.h",
    "packages/vfd-common/*.h",
    "packages/hdf5-vfd-multifile/include/H5FDmultifile.h",
)
INPUT_VERSION = "VERSION"


def inputs():
    """The files of INPUT_SOURCES and INPUT_HEADERS (absolute paths, sorted per pattern),
    and VERSION's path."""

    def files(patterns):
        return [p for pattern in patterns for p in sorted(glob.glob(os.path.join(paths.ROOT, pattern)))]

    return files(INPUT_SOURCES), files(INPUT_HEADERS), os.path.join(paths.ROOT, INPUT_VERSION)


def modified_files(root):
    """{relative path: new text} of the files the patch adds or changes in tree `root`."""
    files = {}
    sources, headers, version_file = inputs()
    with open(version_file) as f:
        version = f.read().strip()  # h5stack's version, which the package's CMake defines
    for path in sources:
        body = open(path).read()
        files[f"src/{os.path.basename(path)}"] = (
            HEADER + '#include "H5pubconf.h"\n#ifdef H5_HAVE_PARALLEL\n#define H5_MULTIFILE_BUILTIN 1\n'
            + f'#define H5STACK_VERSION "{version}"\n'
            + body + "#endif /* H5_HAVE_PARALLEL */\n"
        )  # fmt: skip
    for path in headers:
        files[f"src/{os.path.basename(path)}"] = HEADER + open(path).read()

    cmake = open(os.path.join(root, "src", "CMakeLists.txt")).read()
    cmake = _insert_after(
        cmake,
        "${HDF5_SRC_DIR}/H5FDmpio.c",
        "".join(f"    ${{HDF5_SRC_DIR}}/{os.path.basename(p)}\n" for p in sources),
        "src/CMakeLists.txt",
    )
    cmake = _insert_after(
        cmake, "${HDF5_SRC_DIR}/H5FDmpio.h", "    ${HDF5_SRC_DIR}/H5FDmultifile.h\n", "src/CMakeLists.txt"
    )
    # the driver's metadata checksums are zlib's crc32: a parallel build without zlib would
    # leave libhdf5 with an undefined symbol, found only when a program links it
    cmake = _insert_after(
        cmake,
        "project (HDF5_SRC C",
        "\nif (HDF5_ENABLE_PARALLEL AND NOT H5_HAVE_FILTER_DEFLATE)\n"
        '  message (FATAL_ERROR "the multifile driver (h5stack patch) needs zlib: configure with '
        '-DHDF5_ENABLE_ZLIB_SUPPORT=ON (HDF5 2.x) or -DHDF5_ENABLE_Z_LIB_SUPPORT=ON (1.14)")\n'
        "endif ()\n",
        "src/CMakeLists.txt",
    )
    files["src/CMakeLists.txt"] = cmake

    hdf5_h = open(os.path.join(root, "src", "hdf5.h")).read()
    files["src/hdf5.h"] = _insert_after(
        hdf5_h,
        '#include "H5FDsubfiling.h"',
        '#include "H5FDmultifile.h" /* multifile VFD (h5stack)             */\n',
        "src/hdf5.h",
    )

    fdint = open(os.path.join(root, "src", "H5FDint.c")).read()
    fdint = _insert_after(
        fdint, '#include "H5PLprivate.h"', '#include "H5FDmultifile.h" /* multifile VFD (h5stack) */\n', "src/H5FDint.c"
    )
    # H5FD_register_driver_by_name serves H5Pset_driver_by_name and, for names HDF5 does not
    # ship, HDF5_DRIVER: teaching it the built-in driver covers both
    anchor = "    /* Check if driver is already registered */\n    if ((driver_is_registered = H5FD_is_driver_registered_by_name("
    fdint = _insert_before(
        fdint,
        anchor,
        "#ifdef H5_HAVE_PARALLEL\n"
        "    /* the built-in multifile driver (h5stack patch) registers itself on first use */\n"
        '    if (!strcmp(name, "mpiposix"))\n'
        '        name = "multifile";\n'
        '    if (!strcmp(name, "multifile") && H5FD_MULTIFILE < 0)\n'
        '        HGOTO_ERROR(H5E_VFL, H5E_CANTINIT, H5I_INVALID_HID, "unable to initialize the multifile VFD");\n'
        "#endif\n",
        "src/H5FDint.c",
    )
    files["src/H5FDint.c"] = fdint
    return files


def render(root, series):
    """The unified diff for the pristine tree `root` (paths a/... b/..., for patch -p1)."""
    out = []
    for rel, new in sorted(modified_files(root).items()):
        old_path = os.path.join(root, rel)
        old = open(old_path).read().splitlines(keepends=True) if os.path.exists(old_path) else []
        a = f"a/{rel}" if old else "/dev/null"
        out += difflib.unified_diff(old, new.splitlines(keepends=True), a, f"b/{rel}", n=3)
    if not out:
        raise StepError(f"HDF5 {series}: the patch came out empty")
    return "".join(out)


def pristine(stacks, series, work):
    src = stacks.source(series)
    return src.unpack(os.path.join(work, series))


def run(check=False):
    """Regenerate the HDF5 patches and h5vfd's C constants (check: only check them)."""
    from h5stack.stacks import pyconstants
    from h5stack.stacks.plan import Stacks

    stacks = Stacks()
    stale = []
    with tempfile.TemporaryDirectory() as work:
        for series in stacks.series:
            text = render(pristine(stacks, series, work), series)
            stale += generated.refresh(os.path.join(paths.PATCHES_DIR, patch_name(series)), text, check)
            shutil.rmtree(os.path.join(work, series), ignore_errors=True)
    stale += pyconstants.refresh(check)
    if stale:
        raise StepError("stale generated files (packages/ changed): " + ", ".join(stale) + "; run `./h5stack patches`")
    return 0
