# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""ReFrame programming environments for the views of installed Spack environments
(`./h5stack run --spack-env DIR`, $H5STACK_SPACK_ENVS): what a view holds is read from
the environment's spack.yaml and the view's .spack/<package>/spec.json.
"""

import glob
import json
import os
import shlex

import yaml

from h5stack.base import settings
from h5stack.reframe.environs import SiteConfigError, _env_vars, _hdf5_series
from h5stack.stacks.plan import reframe_environ_name

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


def _install_prefix(node, near):
    """An installed spec's prefix: external path, or <install tree>/.../<name>-<version>-<hash>
    beside the installed prefix `near` (Spack's default projection)."""
    if node.get("external"):
        return node["external"]["path"]
    tree = os.path.dirname(os.path.realpath(near))
    found = glob.glob(os.path.join(tree, f"{node['name']}-*-{node['hash']}"))
    return found[0] if found else None


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


def spack_view_environments(target_systems, env_dirs, mpi_settings=None, mpi_env_vars=None):
    """One programming environment per view of each installed Spack environment, named
    `spack-<environment>` (its default view) or `spack-<environment>-<view>`, '.' -> '_':
    environments/mpich-hdf5-1.14 -> spack-mpich-hdf5-1_14 and spack-mpich-hdf5-1_14-multifile.

    The environment puts the view (and, after it, the environment's other views: h5mf
    for the patched HDF5's view) on PATH and LD_LIBRARY_PATH, the MPI that HDF5 was built
    with first on PATH (external MPIs are not linked into views), prepends the view's
    plugin directory (if any) to HDF5_PLUGIN_PATH, and compiles with the view's h5pcc. Features and extras are those of
    the local stacks (read from the view's spec.json files), plus `spack-view`.

    mpi_settings: {mpi name: {"env": {VAR: value}, "signature": text}} (e.g. Open MPI's
    settings for this machine, from stacks.yaml); mpi_env_vars as for local stacks.
    """
    mpi_settings = mpi_settings or {}
    envs = []
    for env_dir in env_dirs:
        env_dir = os.path.abspath(os.path.expanduser(env_dir))
        env_name = os.path.basename(env_dir.rstrip(os.sep))
        views = spack_views(env_dir)
        all_bins = [os.path.join(root, "bin") for _, root in views]
        for view_name, root in views:
            specs = _view_specs(root)
            hdf5 = specs.get("hdf5")
            if hdf5 is None:
                raise SpackViewError(
                    f"{root}: no HDF5 in this view of {env_dir} (not installed? run `spack -e {env_dir} install`)"
                )
            mpi = _dependency(hdf5, "mpi")
            if mpi is None:
                raise SpackViewError(f"{root}: the view's HDF5 is not built with MPI (hdf5~mpi)")
            mpi_prefix = _install_prefix(mpi, os.path.join(root, "bin", "h5pcc"))
            if mpi_prefix is None:
                raise SpackViewError(f"{root}: cannot find the prefix of {mpi['name']}/{mpi['hash'][:7]}")
            series = _hdf5_series(hdf5["version"])
            name = f"spack-{env_name}" + ("" if view_name == "default" else f"-{view_name}")
            settings = mpi_settings.get(mpi["name"], {})
            bins = [os.path.join(root, "bin")] + [b for b in all_bins if b != os.path.join(root, "bin")]
            path = ":".join([os.path.join(mpi_prefix, "bin")] + bins)
            prepare = [
                f'export PATH="{path}${{PATH:+:$PATH}}"',
                f'export LD_LIBRARY_PATH="{root}/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"',
                f'export CMAKE_PREFIX_PATH="{root}${{CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}}"',
            ]
            if os.path.isdir(os.path.join(root, "lib", "plugin")):
                prepare.append(f'export HDF5_PLUGIN_PATH="{root}/lib/plugin${{HDF5_PLUGIN_PATH:+:$HDF5_PLUGIN_PATH}}"')
            prepare += [f"export {k}={shlex.quote(str(v))}" for k, v in settings.get("env", {}).items()]
            packages = sorted(n for n in specs if n.startswith("hdf5-") or n == "h5pwrite3dc")
            multifile = bool(hdf5.get("parameters", {}).get("multifile")) or "hdf5-vfd-multifile" in packages
            extras = {
                "mpi": mpi["name"],
                "hdf5_version": hdf5["version"],
                "hdf5_series": series,
                "stack": name,
                "spack_environment": env_dir,
                "spack_view": root,
            }
            if "hdf5-vfd-multifile" in packages:
                extras["multifile_prefix"] = root
            if os.path.isfile(os.path.join(root, "bin", "ior")):  # `ior +hdf5` in the environment
                extras["ior"] = os.path.join(root, "bin", "ior")
            if settings.get("signature"):
                extras["mpi_library_signature"] = settings["signature"]
            if settings.get("mpiio_known_faults"):  # this machine's MPIs: their MPI-IO's known faults
                extras["mpiio_known_faults"] = settings["mpiio_known_faults"]
            envs.append(
                {
                    "name": reframe_environ_name(name),
                    "target_systems": target_systems,
                    "prepare_cmds": prepare,
                    "env_vars": _env_vars(mpi["name"], mpi_env_vars),
                    "cc": "h5pcc",
                    "features": ["hdf5-parallel", "spack-view", mpi["name"], "hdf5-" + series.replace(".", "_")]
                    + packages
                    + (["multifile"] if multifile else [])
                    + (["variant-multifile"] if hdf5.get("parameters", {}).get("multifile") else []),
                    "extras": extras,
                }
            )
    return envs
