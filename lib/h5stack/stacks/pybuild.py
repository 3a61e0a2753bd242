# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The Python side of a stack: mpi4py and parallel h5py compiled from their PyPI source
distributions with the stack's mpicc, each into a keyed prefix like every other component
(build.Component: manifest, verified reuse, atomic install).

  py-mpi4py-<mpi>             mpi4py and numpy, once per MPI
  py-h5py-<mpi>-hdf5-<ver>    h5py with HDF5_MPI=ON against one HDF5 build
  py-h5vfd                    the repository's own package (python/): drivers for h5py, h5mf

A prefix holds one `site-packages`; a stack puts the three on PYTHONPATH (stackdir.py).
The versions are pinned in requirements/python-stacks.txt. The extension modules are
built for this Python's ABI (part of the key): any CPython of the same minor version
imports them.
"""

import functools
import os
import re
import sys
import sysconfig

from h5stack.base import paths
from h5stack.base.ui import StepError, run_logged
from h5stack.stacks import build

SITE = "site-packages"
#: added to Python's own flags (-g -O3): no debug information, as in the wheels of PyPI;
#: compiling mpi4py's and h5py's generated C takes a fraction of the time without it
COMPILE_FLAGS = "-g0"


@functools.cache
def pins():
    """{name: version} of requirements/python-stacks.txt."""
    result = {}
    with open(paths.PYTHON_STACK_REQUIREMENTS) as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line.strip())
            if m:
                result[m.group(1).lower()] = m.group(2)
    for name in ("mpi4py", "h5py", "numpy"):
        if name not in result:
            raise StepError(f"{paths.PYTHON_STACK_REQUIREMENTS}: no pinned version of {name}")
    return result


def python_abi():
    return f"cp{sys.version_info.major}{sys.version_info.minor}-{sysconfig.get_platform()}"


class PipComponent(build.Component):
    """A keyed prefix whose site-packages is filled by pip (no build isolation: the
    build tools are pinned wheels in a virtual environment of the build directory)."""

    def __init__(self, name, label, inputs, steps, env=None, required=(), source=None):
        super().__init__(name, label, inputs, prepare=self._prepare, env=env, required=required)
        self.steps = steps  # [(what, [pip install arguments; "{src}": the copied source], extra environment)]
        self.source = source  # a directory of the repository to install, copied first (pip builds in its tree)

    def _prepare(self, work):
        if self.source:
            build.copy_source(self.source, work)
        return work

    def _install(self, src, stage, log, env, jobs):
        builder = os.path.join(src, "build-env")
        run_logged([sys.executable, "-m", "venv", builder], log, f"{self.label}: build environment")
        pip = [os.path.join(builder, "bin", "python"), "-m", "pip", "--disable-pip-version-check"]
        tools = [f"{n}=={v}" for n, v in pins().items() if n not in ("mpi4py", "h5py")]
        run_logged([*pip, "install", "-q", "--only-binary", ":all:", *tools], log, f"{self.label}: build tools")
        pip.append("--no-cache-dir")  # pip's cache of wheels it built would hand one MPI's build to another
        site = os.path.join(stage, SITE)
        env = dict(env, MAKEFLAGS=f"-j{jobs}", CFLAGS=COMPILE_FLAGS, DIST_EXTRA_CONFIG=_parallel_config(src, jobs))
        for what, args, extra in self.steps:
            args = [a.replace("{src}", os.path.join(src, "src")) for a in args]
            run_logged([*pip, "install", "--no-deps", "--target", site, *args], log, f"{self.label}: {what}",
                       env=dict(env, **extra))  # fmt: skip
        return stage


def _parallel_config(work, jobs):
    """A setuptools configuration file (for DIST_EXTRA_CONFIG) that compiles a package's
    extension modules `jobs` at a time (h5py has about thirty; setuptools compiles one at a
    time unless told)."""
    path = os.path.join(work, "parallel.cfg")
    with open(path, "w") as f:
        f.write(f"[build_ext]\nparallel = {jobs}\n")
    return path


def mpi4py_component(mpi):
    """mpi4py compiled against one MPI (and numpy, which h5py needs at run time)."""
    v = pins()
    mpicc = mpi.command("mpicc")
    return PipComponent(
        name=f"py-mpi4py-{mpi.name}",
        label=f"mpi4py {v['mpi4py']} ({mpi.name})",
        inputs={"pins": v, **build_identity(), **mpi.identity()},
        steps=[
            (
                "mpi4py",
                ["--no-binary", "mpi4py", "--no-build-isolation", f"mpi4py=={v['mpi4py']}"],
                {**mpi.build_env(), "MPICC": mpicc},
            ),
            ("numpy", ["--only-binary", ":all:", f"numpy=={v['numpy']}"], {}),
        ],  # fmt: skip
        required=[f"{SITE}/mpi4py/__init__.py", f"{SITE}/numpy/__init__.py"],
    )


def h5py_component(mpi, hdf5, mpi4py):
    """Parallel h5py against one HDF5 build (its mpi4py on the build's PYTHONPATH)."""
    v = pins()
    mpicc = mpi.command("mpicc")
    env = {**mpi.build_env(), "HDF5_MPI": "ON", "HDF5_DIR": hdf5.prefix, "MPICC": mpicc,
           "PYTHONPATH": os.path.join(mpi4py.prefix, SITE)}  # fmt: skip
    return PipComponent(
        name=f"py-h5py-{mpi.name}-hdf5-{hdf5.version}",
        label=f"h5py {v['h5py']} ({mpi.name}, HDF5 {hdf5.version})",
        inputs={
            "pins": v,
            "hdf5_key": hdf5.key,
            "mpi4py_key": mpi4py.key,
            **build_identity(),
        },  # fmt: skip
        steps=[("h5py", ["--no-binary", "h5py", "--no-build-isolation", f"h5py=={v['h5py']}"], env)],
        required=[f"{SITE}/h5py/__init__.py"],
    )


#: h5stack's own Python package (python/): its component here and its Spack recipe
OWN_PYTHON = "py-h5vfd"


def h5vfd_component():
    """The repository's own package (python/): pure Python, one build for every stack."""
    return PipComponent(
        name=OWN_PYTHON,
        label="h5vfd (python/)",
        inputs={"source_tree_sha256": build.tree_sha256(paths.PYTHON_PACKAGE_DIR), "pins": pins()},
        steps=[("h5vfd", ["--no-build-isolation", "{src}"], {})],
        required=[f"{SITE}/h5vfd/__init__.py"],
        source=paths.PYTHON_PACKAGE_DIR,
    )


def build_identity():
    """What the compiled extensions depend on besides the pins: compiler, flags, Python's ABI."""
    return {"compiler": build.first_line(["cc", "--version"]), "cflags": COMPILE_FLAGS, "python": python_abi()}


def site_packages(*components):
    """The components' site-packages directories (a stack's PYTHONPATH, in order)."""
    return [os.path.join(c.prefix, SITE) for c in components]
