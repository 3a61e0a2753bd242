# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""ReFrame programming environments for the views of installed Spack environments
(`./h5stack run --spack-env DIR`, $H5STACK_SPACK_ENVS): what a view holds is read from
the environment's spack.yaml and the view's .spack/<package>/spec.json.
"""

import functools
import glob
import json
import os
import shlex

import yaml

from h5stack.base import settings
from h5stack.reframe.environs import SiteConfigError, _env_vars, _hdf5_series, hdf5_known_faults, reframe_environ_name
from h5stack.stacks.plan import spack_package_and_range, version_in_range
from h5stack.stacks.pybuild import OWN_PYTHON

SPACK_ENVS_VARIABLE = "H5STACK_SPACK_ENVS"


def spack_environment_dirs():
    """The Spack environments (directories) named in $H5STACK_SPACK_ENVS, separated by ':'
    (what `./h5stack run --spack-env DIR` sets)."""
    return [d for d in settings.get(SPACK_ENVS_VARIABLE).split(os.pathsep) if d]


class SpackViewError(SiteConfigError):
    """A Spack environment or view that cannot be used as a programming environment."""


def _view_specs(view_root):
    """{package name: its node in the view's .spack/<name>/spec.json} of a Spack view."""
    nodes = {}
    for path in sorted(glob.glob(os.path.join(view_root, ".spack", "*", "spec.json"))):
        with open(path) as f:
            spec = json.load(f)["spec"]
        root = spec["nodes"][0]
        root["_by_hash"] = {n["hash"]: n for n in spec["nodes"]}
        nodes[root["name"]] = root
    return nodes


def _dependency(node, virtual):
    """The node that provides `virtual` (e.g. mpi) to `node`."""
    for dep in node.get("dependencies", []):
        if virtual in dep.get("parameters", {}).get("virtuals", []) or dep["name"] == virtual:
            return node["_by_hash"].get(dep["hash"])
    return None


def _mpi_bin(prefix, node):
    """The directory of an MPI's launchers: <prefix>/bin, or in a oneAPI install (Spack's
    intel-oneapi-mpi) the component's, <prefix>/mpi/<major.minor or version>/bin. Its
    mpirun must come first on PATH: Intel MPI's runs the mpiexec.hydra it finds there."""
    version = node["version"]
    candidates = [os.path.join(prefix, "bin")] + [
        os.path.join(prefix, "mpi", v, "bin") for v in (".".join(version.split(".")[:2]), version)
    ]
    found = [c for c in candidates if os.path.isfile(os.path.join(c, "mpiexec"))]
    return found[0] if found else candidates[0]


def _install_prefix(node, hdf5_prefix):
    """An installed spec's prefix: an external's path, else what Spack's install database
    (.spack-db/index.json above HDF5's install prefix) says, else <name>-*-<hash> beside
    HDF5's install prefix (Spack's default projection)."""
    if node.get("external"):
        return node["external"]["path"]
    found = _installed_paths(os.path.dirname(hdf5_prefix)).get(node["hash"])
    if found:
        return found
    found = glob.glob(os.path.join(os.path.dirname(hdf5_prefix), f"{node['name']}-*-{node['hash']}"))
    return found[0] if found else None


@functools.cache
def _installed_paths(tree):
    """{hash: prefix} of Spack's install database (.spack-db/index.json) in tree or the
    nearest directory above it that has one; read once per install tree."""
    while tree != os.path.dirname(tree):
        index = os.path.join(tree, ".spack-db", "index.json")
        if os.path.isfile(index):
            with open(index) as f:
                installs = json.load(f)["database"]["installs"]
            return {h: i["path"] for h, i in installs.items() if i.get("path")}
        tree = os.path.dirname(tree)
    return {}


def _machine_mpi(mpi, mpi_settings):
    """(name, settings) of the MPI of this machine (stacks.yaml) that a view's MPI node is:
    the one whose Spack spec its package and version satisfy (MPICH 4.0.2 and 5.0.2 are
    both `mpich`); (its package, {}) for an MPI this machine does not describe."""
    for name, given in mpi_settings.items():
        if not given.get("spack"):
            continue
        package, low, high = spack_package_and_range(given["spack"])
        if package == mpi["name"] and version_in_range(mpi["version"], low, high):
            return name, given
    return mpi["name"], {}


def spack_views(env_dir):
    """The views of an installed Spack environment: [(view name, view root)], default first.

    Reads the environment's spack.yaml (`view:` true, a path, or named views with `root:`).
    """
    manifest = os.path.join(env_dir, "spack.yaml")
    try:
        with open(manifest) as f:
            config = (yaml.safe_load(f) or {}).get("spack", {})
    except OSError as e:
        raise SpackViewError(f"{manifest}: not a Spack environment ({e.strerror})") from None
    view = config.get("view", True)
    if view is True:
        views = {"default": os.path.join(env_dir, ".spack-env", "view")}
    elif isinstance(view, str):
        views = {"default": view}
    elif isinstance(view, dict):
        views = {name: v["root"] if isinstance(v, dict) else v for name, v in view.items()}
    else:
        raise SpackViewError(f"{manifest}: the environment has no view (view: {view!r})")
    views = {n: os.path.normpath(os.path.join(env_dir, r)) for n, r in views.items()}
    return sorted(views.items(), key=lambda nv: (nv[0] != "default", nv[0]))


class _View:
    """One view of an installed Spack environment: its HDF5, the MPI and Python that HDF5
    and h5py were built with, and h5stack's packages in it."""

    def __init__(self, env_dir, view_name, root, mpi_settings):
        self.env_dir, self.view_name, self.root = env_dir, view_name, root
        self.specs = _view_specs(root)
        self.hdf5 = self.specs.get("hdf5")
        if self.hdf5 is None:
            raise SpackViewError(
                f"{root}: no HDF5 in this view of {env_dir} (not installed? run `spack -C SCOPE -e {env_dir} "
                "install` with your system's scope, site-configs/<system>/spack or `./h5stack spack-config`'s; "
                "docs/spack.md)"
            )
        mpi = _dependency(self.hdf5, "mpi")
        if mpi is None:
            raise SpackViewError(f"{root}: the view's HDF5 is not built with MPI (hdf5~mpi)")
        self.hdf5_prefix = os.path.dirname(os.path.dirname(os.path.realpath(os.path.join(root, "bin", "h5pcc"))))
        self.mpi_prefix = _install_prefix(mpi, self.hdf5_prefix)
        if self.mpi_prefix is None:
            raise SpackViewError(f"{root}: cannot find the prefix of {mpi['name']}/{mpi['hash'][:7]}")
        self.mpi_bin = _mpi_bin(self.mpi_prefix, mpi)
        self.mpi_name, self.mpi_settings = _machine_mpi(mpi, mpi_settings)
        self.series = _hdf5_series(self.hdf5["version"])
        self.packages = sorted(n for n in self.specs if n.startswith("hdf5-") or n == "h5pwrite3dc")

    @functools.cached_property
    def python(self):
        """(interpreter, site-packages) of the view's parallel h5py with h5vfd, or None."""
        h5py = self.specs.get("py-h5py")
        if not h5py or not h5py.get("parameters", {}).get("mpi") or OWN_PYTHON not in self.specs:
            return None
        python = _dependency(h5py, "python")
        prefix = python and _install_prefix(python, self.hdf5_prefix)
        site = sorted(glob.glob(os.path.join(self.root, "lib", "python3*", "site-packages")))
        if not prefix or not site:
            raise SpackViewError(f"{self.root}: h5py is in the view, but not its Python or site-packages")
        return os.path.join(prefix, "bin", "python3"), site[-1]

    def prepare(self, all_bins):
        """The environment's commands: the MPI first on PATH, then this view, the others."""
        root = self.root
        bins = [os.path.join(root, "bin")] + [b for b in all_bins if b != os.path.join(root, "bin")]
        path = ":".join([self.mpi_bin] + bins)
        prepare = [
            f'export PATH="{path}${{PATH:+:$PATH}}"',
            f'export LD_LIBRARY_PATH="{root}/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"',
            f'export CMAKE_PREFIX_PATH="{root}${{CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}}"',
        ]
        if os.path.isdir(os.path.join(root, "lib", "plugin")):
            prepare.append(f'export HDF5_PLUGIN_PATH="{root}/lib/plugin${{HDF5_PLUGIN_PATH:+:$HDF5_PLUGIN_PATH}}"')
        if self.python:
            prepare.append(f'export PYTHONPATH="{self.python[1]}${{PYTHONPATH:+:$PYTHONPATH}}"')
        return prepare + [f"export {k}={shlex.quote(str(v))}" for k, v in self.mpi_settings.get("env", {}).items()]

    def features(self):
        patched = bool(self.hdf5.get("parameters", {}).get("multifile"))
        return (
            ["hdf5-parallel", "spack-view", self.mpi_name, "hdf5-" + self.series.replace(".", "_")]
            + self.packages
            + (["multifile"] if patched or "hdf5-vfd-multifile" in self.packages else [])
            + (["variant-multifile"] if patched else [])
            + (["h5py"] if self.python else [])
            + (["netcdf"] if self.specs.get("netcdf-c", {}).get("parameters", {}).get("mpi") else [])
        )

    def extras(self, name):
        extras = {
            "mpi": self.mpi_name,
            "hdf5_version": self.hdf5["version"],
            "hdf5_series": self.series,
            "stack": name,
            "spack_environment": self.env_dir,
            "spack_view": self.root,
        }
        if "hdf5-vfd-multifile" in self.packages:
            extras["multifile_prefix"] = self.root
        if os.path.isfile(os.path.join(self.root, "bin", "ior")):  # `ior +hdf5` in the environment
            extras["ior"] = os.path.join(self.root, "bin", "ior")
        if self.python:
            extras["python"] = self.python[0]
        if self.mpi_settings.get("signature"):
            extras["mpi_library_signature"] = self.mpi_settings["signature"]
        if self.mpi_settings.get("mpiio_known_faults"):  # this machine's MPIs: their MPI-IO's known faults
            extras["mpiio_known_faults"] = self.mpi_settings["mpiio_known_faults"]
        hdf5_known = hdf5_known_faults(self.series)  # its HDF5 series' known faults, as for local stacks
        if hdf5_known:
            extras["hdf5_known_faults"] = hdf5_known
        return extras


def spack_view_environments(target_systems, env_dirs, mpi_settings=None, mpi_env_vars=None):
    """One programming environment per view of each installed Spack environment, named
    `spack-<environment>` (its default view) or `spack-<environment>-<view>`, '.' -> '_':
    environments/mpich-hdf5-1.14 -> spack-mpich-hdf5-1_14 and spack-mpich-hdf5-1_14-multifile.

    The environment puts the view (and, after it, the environment's other views: h5mf
    for the patched HDF5's view) on PATH and LD_LIBRARY_PATH, the MPI that HDF5 was built
    with first on PATH (external MPIs are not linked into views), prepends the view's
    plugin directory (if any) to HDF5_PLUGIN_PATH and its site-packages (parallel h5py
    and h5vfd) to PYTHONPATH, and compiles with the view's h5pcc. Features and extras are
    those of the local stacks (read from the view's spec.json files), plus `spack-view`;
    extras `python`: the interpreter of the view's h5py.

    mpi_settings: {MPI name of stacks.yaml: {"spack": its Spack spec, "env": {VAR: value},
    "signature": text, ...}} (this machine's, environs.this_machine_mpi_settings): a view's
    MPI is the one whose Spack spec its version satisfies. mpi_env_vars as for local stacks.
    """
    envs = []
    for env_dir in env_dirs:
        env_dir = os.path.abspath(os.path.expanduser(env_dir))
        env_name = os.path.basename(env_dir.rstrip(os.sep))
        views = spack_views(env_dir)
        all_bins = [os.path.join(root, "bin") for _, root in views]
        for view_name, root in views:
            view = _View(env_dir, view_name, root, mpi_settings or {})
            name = f"spack-{env_name}" + ("" if view_name == "default" else f"-{view_name}")
            envs.append(
                {
                    "name": reframe_environ_name(name),
                    "target_systems": target_systems,
                    "prepare_cmds": view.prepare(all_bins),
                    "env_vars": _env_vars(view.mpi_name, mpi_env_vars),
                    "cc": "h5pcc",
                    "features": view.features(),
                    "extras": view.extras(name),
                }
            )
    return envs
