"""The local stacks: <mpi>-hdf5-<series>, as stacks.yaml defines them.

A stack is assembled from built components (build.py): parallel HDF5 for its MPI,
and, for every project in packages/ (later issues), that project built against it.
Its description lives in $H5STACK_HOME/stacks/<stack>/:
  stack.json  what is in it (versions, prefixes, sources): read by `h5stack env`,
              `h5stack list` and the ReFrame site configs
  env.sh      the same exports as `h5stack env <stack>`
  bin/        mpicc/mpicxx/mpiexec/mpirun of the stack's MPI (Debian installs both
              MPIs in /usr behind one alternatives link) and borrowed tools
  plugins/    links to the HDF5 plugins of the stack's packages (HDF5_PLUGIN_PATH)
"""

import functools
import glob
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time

import yaml

from . import build, paths, sources
from .ui import StepError, info

MPI_CHECK_C = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int provided, len;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Get_library_version(version, &len);
    printf("thread_multiple=%d\n%s\n", provided == MPI_THREAD_MULTIPLE, version);
    MPI_Finalize();
    return 0;
}
"""


def load_config(path=None):
    with open(path or paths.STACKS_FILE) as f:
        return yaml.safe_load(f)


class MPI:
    def __init__(self, name, spec):
        self.name = name
        self.description = spec.get("description", name)
        self.commands = spec["commands"]
        self.debian_package = spec.get("debian_package")
        self.signature = spec["library_signature"]
        self.env = {k: str(v) for k, v in (spec.get("env") or {}).items()}
        self.env_as_root = {k: str(v) for k, v in (spec.get("env_as_root") or {}).items()}

    def command(self, name):
        path = shutil.which(self.commands[name])
        if not path:
            raise StepError(f"{self.description}: `{self.commands[name]}` not found on PATH")
        return path

    def run_env(self, as_root=None):
        as_root = os.geteuid() == 0 if as_root is None else as_root
        return {**self.env, **(self.env_as_root if as_root else {})}

    def version(self):
        if self.debian_package:
            out = subprocess.run(
                ["dpkg-query", "-W", "-f=${Version}", self.debian_package], capture_output=True, text=True
            ).stdout
            if out:
                return out.strip()
        return build.first_line([self.command("mpicc"), "--version"])

    @functools.cache  # noqa: B019 (one MPI object per run)
    def identity(self):
        """What makes builds with this MPI differ (part of cache keys); computed once."""
        show = subprocess.run([self.command("mpicc"), "-show"], capture_output=True, text=True).stdout.strip()
        return {"mpi": self.name, "mpi_version": self.version(), "mpicc_show": show}

    def check(self):
        """Compile and run a one-rank program: library version and MPI_THREAD_MULTIPLE."""
        cache_file = os.path.join(paths.sub("checks"), f"mpi-{self.name}.json")
        ident = self.identity()
        try:
            with open(cache_file) as f:
                cached = json.load(f)
            if cached.get("identity") == ident:
                return cached
        except (OSError, ValueError):
            pass
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "mpicheck.c")
            with open(src, "w") as f:
                f.write(MPI_CHECK_C)
            exe = os.path.join(tmp, "mpicheck")
            proc = subprocess.run([self.command("mpicc"), src, "-o", exe], capture_output=True, text=True)
            if proc.returncode != 0:
                raise StepError(f"{self.description}: cannot compile an MPI program:\n{proc.stderr}")
            env = dict(os.environ, **self.run_env())
            proc = subprocess.run(
                [self.command("mpiexec"), "-n", "1", exe], capture_output=True, text=True, env=env, timeout=120
            )
            if proc.returncode != 0 or "thread_multiple=" not in proc.stdout:
                raise StepError(f"{self.description}: cannot run an MPI program:\n{proc.stdout}{proc.stderr}")
        lines = proc.stdout.splitlines()
        result = {
            "identity": ident,
            "thread_multiple": lines[0].endswith("=1"),
            "library_version": lines[1].strip() if len(lines) > 1 else "",
        }
        if self.signature not in result["library_version"]:
            raise StepError(
                f"{self.description}: MPI_Get_library_version says {result['library_version']!r}, "
                f"expected {self.signature!r}: the wrong MPI is behind {self.commands['mpicc']}"
            )
        with open(cache_file, "w") as f:
            json.dump(result, f, indent=1)
        return result


def twin_patches(twin_spec, series):
    """The patches of a twin (stacks.yaml `twins`) for a series; [] for a plain stack."""
    return [twin_spec["patches"][series]] if twin_spec else []


@functools.cache
def toolchain():
    """Compiler and CMake versions (part of cache keys); asked once per run."""
    return {"compiler": build.first_line(["cc", "--version"]), "cmake": build.first_line(["cmake", "--version"])}


class Stack:
    """<mpi>-hdf5-<series>, or its patched twin <mpi>-hdf5-<series>-<variant> (stacks.yaml `twins`)."""

    def __init__(self, mpi, series, series_spec, variant=None, twin_spec=None):
        self.mpi = mpi
        self.series = series
        self.spec = series_spec
        self.variant = variant
        self.twin = twin_spec or {}
        self.base_name = f"{mpi.name}-hdf5-{series}"
        self.name = self.base_name + (f"-{variant}" if variant else "")
        self.dir = os.path.join(paths.sub("stacks"), self.name)

    def patches(self):
        return twin_patches(self.twin, self.series)

    def description(self):
        """stack.json of a set-up stack, or None."""
        try:
            with open(os.path.join(self.dir, "stack.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None


class Stacks:
    """All stacks of stacks.yaml and how to build them."""

    def __init__(self, config=None, tarballs=None):
        self.config = config or load_config()
        self.mpis = {name: MPI(name, spec) for name, spec in self.config["mpis"].items()}
        self.series = {str(k): v for k, v in self.config["hdf5"].items()}
        self.tarballs = tarballs or {}
        self.stacks = {}
        for series, spec in self.series.items():
            for mpi in self.mpis.values():
                stack = Stack(mpi, series, spec)
                self.stacks[stack.name] = stack
        for variant, twin in (self.config.get("twins") or {}).items():
            for series, spec in self.series.items():
                for mpi_name in twin["mpis"]:
                    if series in twin["patches"]:
                        stack = Stack(self.mpis[mpi_name], series, spec, variant, twin)
                        self.stacks[stack.name] = stack
        self._sources = {}
        self._hdf5 = {}
        self._packages = {}

    def names(self):
        return list(self.stacks)

    def get(self, name):
        if name not in self.stacks:
            raise StepError(f"unknown stack {name!r}; the stacks are: {', '.join(self.stacks)}")
        return self.stacks[name]

    # -- HDF5 --------------------------------------------------------------
    def source(self, series):
        if series not in self._sources:
            self._sources[series] = sources.obtain(series, self.series[series]["sources"], self.tarballs.get(series))
            info(f"HDF5 {series}: source is the {self._sources[series].origin}")
        return self._sources[series]

    def hdf5_component(self, series, mpi, variant=None):
        key = (series, mpi.name, variant)
        if key in self._hdf5:
            return self._hdf5[key]
        spec = self.series[series]
        src = self.source(series)
        mpi_check = mpi.check()
        tools = spec.get("tools") == "build"
        options = {k: str(v) for k, v in self.config["hdf5_cmake_options"].items()}
        options.update(
            CMAKE_C_COMPILER=mpi.command("mpicc"),
            MPI_C_COMPILER=mpi.command("mpicc"),
            MPIEXEC_EXECUTABLE=mpi.command("mpiexec"),
            HDF5_BUILD_TOOLS="ON" if tools else "OFF",
            HDF5_BUILD_UTILS="ON",
        )
        if not mpi_check["thread_multiple"]:
            info(f"{mpi.description} lacks MPI_THREAD_MULTIPLE: building HDF5 without the subfiling VFD")
            options["HDF5_ENABLE_SUBFILING_VFD"] = "OFF"
        patches = twin_patches((self.config.get("twins") or {}).get(variant, {}), series)
        inputs = {
            "source_sha256": src.sha256,
            "patches": {p: sources.sha256_of(os.path.join(paths.PATCHES_DIR, p)) for p in patches},
            "cmake_options": {k: v for k, v in options.items()},
            **toolchain(),
            **mpi.identity(),
        }

        def prepare(work):
            return _unpack_patched(src, [os.path.join(paths.PATCHES_DIR, p) for p in patches], work)

        required = ["lib/libhdf5.so", "lib/libhdf5_hl.so", "bin/h5pcc", "include/hdf5.h"]
        if tools:
            required += ["bin/h5dump", "bin/h5diff"]
        version = _version_from_source_name(src)
        suffix = f"-{variant}" if variant else ""
        comp = build.Component(
            name=f"hdf5-{version}-{mpi.name}{suffix}",
            label=f"HDF5 {version} ({mpi.name}{', ' + variant if variant else ''})",
            inputs=inputs,
            prepare=prepare,
            cmake_options=options,
            env={"CC": mpi.command("mpicc")},
            required=required,
        )
        comp.series = series
        comp.version = version
        comp.source = src
        comp.mpi_check = mpi_check
        self._hdf5[key] = comp
        return comp

    def hdf5_tests_component(self, stack):
        """HDF5's own test programs for a plain stack (stacks.yaml `hdf5_test_builds`).

        A separate keyed build of the stack's HDF5 source and options plus the test
        options and the patch named there; its build tree is kept for ctest. None when
        the stack's series has no entry (its source ships no tests) or for a twin.
        """
        spec = (self.config.get("hdf5_test_builds") or {}).get(stack.series)
        if not spec or stack.variant:
            return None
        key = ("tests", stack.series, stack.mpi.name)
        if key in self._hdf5:
            return self._hdf5[key]
        base = self.hdf5_component(stack.series, stack.mpi)
        patch = os.path.join(paths.ROOT, spec["patch"])
        options = dict(base.cmake_options, **{k: str(v) for k, v in spec["cmake_options"].items()})
        inputs = {
            "source_sha256": base.source.sha256,
            "patches": {spec["patch"]: sources.sha256_of(patch)},
            "cmake_options": options,
            **toolchain(),
            **stack.mpi.identity(),
        }
        comp = build.Component(
            name=f"hdf5-tests-{base.version}-{stack.mpi.name}",
            label=f"HDF5 {base.version} test programs ({stack.mpi.name})",
            inputs=inputs,
            prepare=lambda work: _unpack_patched(base.source, [patch], work),
            cmake_options=options,
            env={"CC": stack.mpi.command("mpicc")},
            required=["lib/libhdf5.so"],
            keep_build=True,
        )
        self._hdf5[key] = comp
        return comp

    def setup_hdf5_tests(self, jobs=None):
        """Build HDF5's test programs for every plain stack whose series has them."""
        with paths.locked("setup"):
            for name in self.names():
                comp = self.hdf5_tests_component(self.get(name))
                if comp:
                    comp.ensure(jobs)

    # -- our packages (packages/*) ------------------------------------------
    def package_dirs(self):
        """Every CMake project under packages/, built into every stack."""
        return sorted(os.path.dirname(p) for p in glob.glob(os.path.join(paths.PACKAGES_DIR, "*", "CMakeLists.txt")))

    def package_component(self, pkg_dir, stack):
        """A project of packages/ built against the stack's HDF5 and MPI.

        The build tree is kept so `./h5stack test` can run the project's ctest. HDF5
        plugins it installs into lib/plugin/ are linked into the stack's plugins/.
        """
        memo = (pkg_dir, stack.name)  # one key per run, even if the tree is edited meanwhile
        if memo in self._packages:
            return self._packages[memo]
        hdf5 = self.hdf5_component(stack.series, stack.mpi, stack.variant)
        pkg = os.path.basename(pkg_dir)
        inputs = {
            "source_tree_sha256": build.tree_sha256(pkg_dir),
            "hdf5_key": hdf5.key,
            **toolchain(),
            **stack.mpi.identity(),
        }
        options = {
            "CMAKE_BUILD_TYPE": "RelWithDebInfo",
            "CMAKE_C_COMPILER": stack.mpi.command("mpicc"),
            "MPI_C_COMPILER": stack.mpi.command("mpicc"),
            "MPIEXEC_EXECUTABLE": stack.mpi.command("mpiexec"),
            "CMAKE_PREFIX_PATH": hdf5.prefix,
            "HDF5_ROOT": hdf5.prefix,
            "BUILD_TESTING": "ON",
        }
        inputs["cmake_options"] = options
        self._packages[memo] = build.Component(
            name=f"{pkg}-{stack.name}",
            label=f"{pkg} ({stack.name})",
            inputs=inputs,
            prepare=lambda work: pkg_dir,
            cmake_options=options,
            env={"CC": stack.mpi.command("mpicc"), **stack.mpi.run_env()},
            keep_build=True,
        )
        return self._packages[memo]

    # -- set-up -------------------------------------------------------------
    def needed_stacks(self, names):
        """These stacks and those they borrow from (a twin's base), bases first."""
        order = []
        for name in names:
            stack = self.get(name)
            for n in ([stack.base_name] if stack.variant else []) + [stack.name]:
                if n not in order:
                    order.append(n)
        return order

    def needed_hdf5(self, names):
        """HDF5 builds (series, mpi, variant) for these stacks, borrowed tools' first."""
        order = []
        for name in self.needed_stacks(names):
            stack = self.get(name)
            tools = stack.spec.get("tools")
            deps = [(str(tools["from_series"]), stack.mpi.name, None)] if isinstance(tools, dict) else []
            for item in deps + [(stack.series, stack.mpi.name, stack.variant)]:
                if item not in order:
                    order.append(item)
        return order

    def stack_packages(self, stack):
        """The projects of packages/ built into a stack (a twin leaves some out)."""
        skip = set(stack.twin.get("without_packages", []))
        return [d for d in self.package_dirs() if os.path.basename(d) not in skip]

    def setup(self, names=None, jobs=None):
        names = names or self.names()
        t0 = time.monotonic()
        with paths.locked("setup"):
            self._setup(names, jobs)
        info(f"set-up of {len(names)} stack(s) done in {time.monotonic() - t0:.0f} s")

    def _setup(self, names, jobs):
        for series, mpi_name, variant in self.needed_hdf5(names):
            self.hdf5_component(series, self.mpis[mpi_name], variant).ensure(jobs)
        for name in self.needed_stacks(names):
            stack = self.get(name)
            for pkg_dir in self.stack_packages(stack):
                self.package_component(pkg_dir, stack).ensure(jobs)
            self.write_stack_dir(stack)

    def write_stack_dir(self, stack):
        hdf5 = self.hdf5_component(stack.series, stack.mpi, stack.variant)
        if hdf5.status() is not None:
            raise StepError(f"{stack.name}: HDF5 is not built ({hdf5.status()})")
        tools = stack.spec.get("tools")
        tools_from = None
        if isinstance(tools, dict):
            tools_from = self.hdf5_component(str(tools["from_series"]), stack.mpi)
        tmp = stack.dir + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(os.path.join(tmp, "bin"))
        os.makedirs(os.path.join(tmp, "plugins"))
        for name in stack.mpi.commands:
            write_wrapper(os.path.join(tmp, "bin", name), stack.mpi.command(name))
        pkgs = []
        for pkg_dir in self.stack_packages(stack):
            comp = self.package_component(pkg_dir, stack)
            if comp.status() is not None:
                raise StepError(f"{stack.name}: {comp.label} is not built ({comp.status()})")
            pkgs.append({"name": os.path.basename(pkg_dir), "prefix": comp.prefix, "build_dir": comp.build_dir})
            for plugin in sorted(glob.glob(os.path.join(comp.prefix, "lib", "plugin", "*.so"))):
                os.symlink(plugin, os.path.join(tmp, "plugins", os.path.basename(plugin)))
        borrowed = []
        if tools_from:
            own = set(os.listdir(os.path.join(hdf5.prefix, "bin")))
            # a borrowed tool runs on its own libhdf5: it must load the plugins built against
            # that library (the lending stack's), never this stack's (two libhdf5 in one process)
            lender = self.get(f"{stack.mpi.name}-hdf5-{tools['from_series']}")
            plugins = {"HDF5_PLUGIN_PATH": os.path.join(lender.dir, "plugins")}
            for tool in sorted(os.listdir(os.path.join(tools_from.prefix, "bin"))):
                if tool in own or tool.startswith(("h5cc", "h5pcc", "h5hlcc", "h5redeploy", "h5c++", "h5fc")):
                    continue
                write_wrapper(os.path.join(tmp, "bin", tool), os.path.join(tools_from.prefix, "bin", tool), plugins)
                borrowed.append(tool)
        for program in stack.twin.get("borrow_programs", []):  # e.g. h5mf from the base stack
            base = self.get(stack.base_name)
            for pkg_dir in self.stack_packages(base):
                target = os.path.join(self.package_component(pkg_dir, base).prefix, "bin", program)
                if os.path.exists(target):
                    write_wrapper(os.path.join(tmp, "bin", program), target)
                    borrowed.append(f"{program} (from {base.name})")
        description = {
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
            "tools": (
                f"HDF5 {tools_from.version} tools from {tools_from.prefix}: {', '.join(borrowed)}"
                if tools_from
                else f"HDF5 {hdf5.version}"
            ),
            "prefixes": [p["prefix"] for p in pkgs] + [hdf5.prefix],
            "packages": pkgs,
            "stack_dir": stack.dir,
            "mpi_env": stack.mpi.env,
            "mpi_env_as_root": stack.mpi.env_as_root,
            "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        with open(os.path.join(tmp, "stack.json"), "w") as f:
            json.dump(description, f, indent=1)
        with open(os.path.join(tmp, "env.sh"), "w") as f:
            f.write(render_sh(description))
        shutil.rmtree(stack.dir, ignore_errors=True)
        os.replace(tmp, stack.dir)

    def status(self, name):
        """(built?, detail) of a stack, checking its HDF5 install on disk."""
        stack = self.get(name)
        desc = stack.description()
        if not desc:
            return False, "not set up"
        reason = build.verify(desc["hdf5_prefix"], os.path.basename(desc["hdf5_prefix"]).rsplit("-", 1)[-1])
        if reason:
            return False, f"HDF5 install damaged: {reason}"
        return True, f"HDF5 {desc['hdf5_version']}, {desc['mpi_description']} {desc['mpi_version']}"


def _unpack_patched(src, patches, work):
    """Unpack a source into work/src and apply patches (paths) with `patch -p1`."""
    root = src.unpack(os.path.join(work, "src"))
    for patch in patches:
        with open(patch) as f:
            proc = subprocess.run(["patch", "-p1"], cwd=root, stdin=f, capture_output=True, text=True)
        if proc.returncode != 0:
            raise StepError(f"patch {os.path.relpath(patch, paths.ROOT)} does not apply:\n{proc.stdout}{proc.stderr}")
    return root


def _version_from_source_name(src):
    """HDF5 version from the source; unpacks only H5public.h when needed."""
    with tempfile.TemporaryDirectory() as tmp:
        member_root = subprocess.run(["tar", "tf", src.archive], capture_output=True, text=True).stdout.split("\n", 1)[
            0
        ]
        top = member_root.split("/")[0]
        sub = f"{top}/{src.subdir + '/' if src.subdir else ''}src/H5public.h"
        proc = subprocess.run(["tar", "xf", src.archive, "-C", tmp, sub], capture_output=True, text=True)
        if proc.returncode != 0:
            raise StepError(f"{src.archive}: no {sub}: {proc.stderr.strip()}")
        return sources.hdf5_version_of(os.path.dirname(os.path.dirname(os.path.join(tmp, sub))))


def reframe_environ_name(stack_name):
    """ReFrame environment names allow only [A-Za-z0-9_-]: mpich-hdf5-1.14 -> mpich-hdf5-1_14."""
    return stack_name.replace(".", "_")


def write_wrapper(path, target, env=None):
    """A program in a stack's bin/ that runs target (an MPI command, a borrowed tool),
    with the variables of env set (replacing the caller's values)."""
    lines = "".join(f"{name}={shlex.quote(value)}\nexport {name}\n" for name, value in (env or {}).items())
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\n{lines}exec "{target}" "$@"\n')
    os.chmod(path, 0o755)


def wrapper_target(path):
    """What a wrapper of write_wrapper runs."""
    with open(path) as f:
        return f.read().split('exec "', 1)[1].split('"', 1)[0]


def wrapper_env(path):
    """The variables a wrapper of write_wrapper sets: {name: value}."""
    with open(path) as f:
        lines = f.read().split('exec "', 1)[0].splitlines()[1:]
    return {name: shlex.split(value)[0] for name, value in (ln.split("=", 1) for ln in lines if "=" in ln)}


def exports(desc, as_root=None):
    """[(variable, value, prepend?)] that put a stack to use.

    as_root: add the MPI's settings for running as root (True/False); None: decide
    from the current user.
    """
    as_root = os.geteuid() == 0 if as_root is None else as_root
    prefixes = desc["prefixes"]
    result = [
        ("H5STACK_STACK", desc["name"], False),
        ("PATH", ":".join([os.path.join(desc["stack_dir"], "bin")] + [f"{p}/bin" for p in prefixes]), True),
        ("LD_LIBRARY_PATH", ":".join(f"{p}/lib" for p in prefixes), True),
        ("PKG_CONFIG_PATH", ":".join(f"{p}/lib/pkgconfig" for p in prefixes), True),
        ("CMAKE_PREFIX_PATH", ":".join(prefixes), True),
        ("HDF5_PLUGIN_PATH", os.path.join(desc["stack_dir"], "plugins"), True),
    ]
    env = dict(desc.get("mpi_env", {}))
    if as_root:
        env.update(desc.get("mpi_env_as_root", {}))
    result += [(k, v, False) for k, v in env.items()]
    return result


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
