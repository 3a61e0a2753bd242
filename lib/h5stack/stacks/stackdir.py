# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The directory of a local stack, $H5STACK_HOME/stacks/<stack>/, written from its
built components:
  stack.json  what is in it (versions, prefixes, sources): read by `h5stack env`,
              `h5stack list` and the ReFrame site configs
  env.sh      the same exports as `h5stack env <stack>`
  bin/        mpicc/mpicxx/mpiexec/mpirun of the stack's MPI (Debian installs both
              MPIs in /usr behind one alternatives link), HDF5's tools from Debian's
              packages where the stack's HDF5 source has no tools/ (debtools.py), a
              twin's programs of its base stack
  plugins/    links to the HDF5 plugins of the stack's packages (HDF5_PLUGIN_PATH)
"""

import glob
import json
import os
import shlex
import shutil
import time

from h5stack.base.ui import StepError
from h5stack.stacks import pybuild

#: HDF5's compiler wrappers and scripts of the stack's own build, never taken from Debian's tools
OWN_BUILD = ("h5cc", "h5pcc", "h5hlcc", "h5redeploy", "h5c++", "h5fc")


def write(registry, stack):
    """Write stack's directory (atomically: built in <dir>.tmp, then renamed)."""
    hdf5 = registry.hdf5_component(stack.series, stack.mpi, stack.variant)
    if hdf5.status() is not None:
        raise StepError(f"{stack.name}: HDF5 is not built ({hdf5.status()})")
    tmp = stack.dir + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "bin"))
    os.makedirs(os.path.join(tmp, "plugins"))
    wrappers = [write_wrapper(os.path.join(tmp, "bin", name), stack.mpi.command(name)) for name in stack.mpi.commands]
    pkgs = _link_packages(registry, stack, tmp)
    tools, tool_wrappers = _tools(registry, stack, hdf5, tmp)
    wrappers += tool_wrappers + _borrow_programs(registry, stack, tmp)
    description = _description(stack, hdf5, pkgs, tools, wrappers, _clients(registry, stack))
    description["python_path"] = _python_path(registry, stack)
    description["hdf5_testpar"] = _hdf5_testpar(registry, stack)
    with open(os.path.join(tmp, "stack.json"), "w") as f:
        json.dump(description, f, indent=1)
    with open(os.path.join(tmp, "env.sh"), "w") as f:
        f.write(render_sh(description))
    shutil.rmtree(stack.dir, ignore_errors=True)
    os.replace(tmp, stack.dir)


def _link_packages(registry, stack, tmp):
    """The stack's packages (name, prefix, build_dir), their plugins linked into plugins/."""
    pkgs = []
    for pkg_dir in registry.stack_packages(stack):
        comp = registry.package_component(pkg_dir, stack)
        if comp.status() is not None:
            raise StepError(f"{stack.name}: {comp.label} is not built ({comp.status()})")
        pkgs.append({"name": os.path.basename(pkg_dir), "prefix": comp.prefix, "build_dir": comp.build_dir})
        for plugin in sorted(glob.glob(os.path.join(comp.prefix, "lib", "plugin", "*.so"))):
            os.symlink(plugin, os.path.join(tmp, "plugins", os.path.basename(plugin)))
    return pkgs


def _clients(registry, stack):
    """The HDF5 clients built into the stack (netCDF-C, stacks.yaml `netcdf_builds`):
    name, version, prefix, build_dir, source_dir (the kept trees: its test programs are
    compiled from them); each built."""
    comp = registry.netcdf_component(stack)
    if comp is None:
        return []
    if comp.status() is not None:
        raise StepError(f"{stack.name}: {comp.label} is not built ({comp.status()})")
    version = registry.config["netcdf_builds"]["source"]["upstream_version"]
    source = os.path.join(comp.work, "src", f"netcdf-c-{version}")
    return [{"name": "netcdf-c", "version": version, "prefix": comp.prefix, "build_dir": comp.build_dir,
             "source_dir": source if os.path.isdir(source) else None}]  # fmt: skip


def _hdf5_testpar(registry, stack):
    """The directory of HDF5's parallel test programs built with the stack's HDF5 and MPI
    (stacks.yaml `hdf5_test_builds`; reframe-tests/hdf5-testpar runs them), or None."""
    comp = registry.hdf5_tests_component(stack)
    if comp is None:
        return None
    if comp.status() is not None:
        raise StepError(f"{stack.name}: {comp.label} are not built ({comp.status()})")
    return os.path.join(comp.build_dir, "bin")


def _python_path(registry, stack):
    """The site-packages of the stack's Python components (PYTHONPATH), each built."""
    comps = registry.python_components(stack)
    for comp in comps:
        if comp.status() is not None:
            raise StepError(f"{stack.name}: {comp.label} is not built ({comp.status()})")
    return pybuild.site_packages(*comps)


def _tools(registry, stack, hdf5, tmp):
    """A stack's HDF5 tools: (stack.json's `tools`, the wrappers in bin/). Those of its own
    HDF5 build (in its prefix's bin/, on PATH), or, for a source without tools/, Debian's
    (stacks.yaml `debian_tools`, debtools.py): a wrapper in bin/ for each program of that
    tree that the stack's HDF5 does not install itself. Their launchers choose the plugins
    they load (never the stack's plugins/, built against another libhdf5)."""
    debian = registry.debian_tools(stack.series)
    if not debian:
        return {
            "origin": "build",
            "hdf5_version": hdf5.version,
            "prefix": hdf5.prefix,
            "source": hdf5.source.origin,
        }, []
    if debian.status() is not None:
        raise StepError(f"{stack.name}: {debian.label} is not set up ({debian.status()})")
    tools = debian.description()
    own = set(os.listdir(os.path.join(hdf5.prefix, "bin")))
    wrappers = [
        write_wrapper(os.path.join(tmp, "bin", program), os.path.join(tools["prefix"], "bin", program))
        for program in tools["programs"]
        if program not in own and not program.startswith(OWN_BUILD)
    ]
    return dict(tools, programs=[w["name"] for w in wrappers]), wrappers


def _borrow_programs(registry, stack, tmp):
    """Wrappers of a twin's programs taken from its base stack (e.g. h5mf)."""
    wrappers = []
    base = stack.base
    for program in stack.twin.get("borrow_programs", []):
        for pkg_dir in registry.stack_packages(base):
            target = os.path.join(registry.package_component(pkg_dir, base).prefix, "bin", program)
            if os.path.exists(target):
                wrappers.append(write_wrapper(os.path.join(tmp, "bin", program), target, lender=base.name))
    return wrappers


def _description(stack, hdf5, pkgs, tools, wrappers, clients):
    """stack.json: the one hand-over from the builder to `env`, `list` and the site configs."""
    return {
        "name": stack.name,
        "variant": stack.variant,
        "hdf5_patches": stack.patches(),
        "mpi": stack.mpi.name,
        "mpi_description": stack.mpi.description,
        "mpi_version": stack.mpi.identity()["mpi_version"],
        "mpi_library_version": hdf5.mpi_check["library_version"],
        "mpi_library_signature": stack.mpi.signature,
        "mpi_thread_multiple": hdf5.mpi_check["thread_multiple"],
        "hdf5_series": stack.series,
        "hdf5_version": hdf5.version,
        "hdf5_prefix": hdf5.prefix,
        "hdf5_source": hdf5.source.origin,
        "hdf5_source_sha256": hdf5.source.sha256,
        "tools": tools,
        "wrappers": wrappers,
        "prefixes": [p["prefix"] for p in pkgs + clients] + [hdf5.prefix],
        "packages": pkgs,
        "clients": clients,
        "stack_dir": stack.dir,
        "mpi_env": stack.mpi.env,
        "mpi_env_as_root": stack.mpi.env_as_root,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_wrapper(path, target, env=None, lender=None):
    """A program in a stack's bin/ that runs target (an MPI command, an HDF5 tool of
    Debian's, a twin's program of its base stack), with the variables of env set (replacing
    the caller's values). Returns what stack.json records of it: name, target, env and the
    stack it is borrowed from (lender: None but for a twin's programs)."""
    lines = "".join(f"{name}={shlex.quote(value)}\nexport {name}\n" for name, value in (env or {}).items())
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\n{lines}exec "{target}" "$@"\n')
    os.chmod(path, 0o755)
    return {"name": os.path.basename(path), "target": target, "env": dict(env or {}), "lender": lender}


def exports(desc, as_root=None):
    """[(variable, value, prepend?)] that put a stack to use.

    as_root: add the MPI's settings for running as root (True/False); None: decide
    from the current user.
    """
    as_root = os.geteuid() == 0 if as_root is None else as_root
    prefixes = desc["prefixes"]
    result = [
        ("H5STACK_STACK", desc["name"], False),
        (
            "PATH",
            ":".join(dict.fromkeys([os.path.join(desc["stack_dir"], "bin")] + [f"{p}/bin" for p in prefixes])),
            True,
        ),
        ("LD_LIBRARY_PATH", ":".join(f"{p}/lib" for p in prefixes), True),
        ("PKG_CONFIG_PATH", ":".join(f"{p}/lib/pkgconfig" for p in prefixes), True),
        ("CMAKE_PREFIX_PATH", ":".join(prefixes), True),
        ("HDF5_PLUGIN_PATH", os.path.join(desc["stack_dir"], "plugins"), True),
    ]
    if desc.get("python_path"):  # mpi4py, parallel h5py, h5vfd (lib/h5stack/stacks/pybuild.py)
        result.append(("PYTHONPATH", ":".join(desc["python_path"]), True))
    env = dict(desc.get("mpi_env", {}))
    if as_root:
        env.update(desc.get("mpi_env_as_root", {}))
    result += [(k, v, False) for k, v in env.items()]
    return result


def process_env(desc):
    """This process's environment with a stack put to use, for the programs a tool starts
    in it (the fuzzer's and the crash explorer's runs): without the variables that choose
    a driver or slow a rank, so that each run sets its own."""
    env = dict(os.environ)
    for var, value, prepend in exports(desc):
        env[var] = f"{value}:{env[var]}" if prepend and env.get(var) else value
    for var in ("HDF5_DRIVER", "HDF5_DRIVER_CONFIG", "LD_PRELOAD", "H5FUZZ_DELAY", "H5FUZZ_CLOCK"):
        env.pop(var, None)
    return env


def _sh_line(var, value, prepend):
    if prepend:  # no empty entry when the variable was unset: it would mean "."
        return f'export {var}="{value}${{{var}:+:${var}}}"'
    return f'export {var}="{value}"'


def render_sh(desc, as_root=None):
    """Shell exports; with as_root=None the root-only settings are guarded by `id -u`."""
    lines = [f"# h5stack {desc['name']}: HDF5 {desc['hdf5_version']} with {desc['mpi_description']}"]
    lines += [_sh_line(*e) for e in exports(desc, as_root=bool(as_root))]
    root_env = desc.get("mpi_env_as_root", {})
    if as_root is None and root_env:
        lines.append('if [ "$(id -u)" = 0 ]; then')
        lines += [f"  {_sh_line(k, v, False)}" for k, v in root_env.items()]
        lines.append("fi")
    return "\n".join(lines) + "\n"
