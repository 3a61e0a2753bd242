# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The local stacks: <mpi>-hdf5-<series>, as stacks.yaml defines them, and their plan.

A stack is assembled from built components (build.py): parallel HDF5 for its MPI
(mpi.py), and every project in packages/ built against it; its directory,
$H5STACK_HOME/stacks/<stack>/, is written by stackdir.py.
"""

import functools
import glob
import itertools
import json
import os
import re
import threading
import time

import yaml

from h5stack.base import paths
from h5stack.base.ui import StepError, info
from h5stack.stacks import build, debtools, pybuild, sources, stackdir
from h5stack.stacks.mpi import MPI


def load_config(path=None):
    with open(path or paths.STACKS_FILE) as f:
        return yaml.safe_load(f)


def debian_mpis(config):
    """{name: spec} of the MPIs of stacks.yaml that Debian installs: Spack's externals here.
    The MPIs of the wheels are externals too, at their own prefixes (h5stack/spack/config.py)."""
    return {name: spec for name, spec in config["mpis"].items() if spec.get("debian_package")}


def spack_mpis(config):
    """{name: Spack spec} of the MPIs of stacks.yaml (`spack`): the MPI of each stack's
    Spack environment (environments/<mpi>-hdf5-<series>)."""
    return {name: spec["spack"] for name, spec in config["mpis"].items() if spec.get("spack")}


#: the Spack specs stacks.yaml gives its MPIs: a package, then @V, @V:, @:V or @V:W or nothing
SPACK_MPI_SPEC = re.compile(r"([a-z0-9-]+)(?:@(\d+(?:\.\d+)*)?(:)?(\d+(?:\.\d+)*)?)?")


def spack_package_and_range(spec):
    """(package, low, high) of an MPI's Spack spec in stacks.yaml, the bounds as tuples of
    ints, inclusive, None where open: `mpich@4.2:` -> ('mpich', (4, 2), None); `openmpi@5`
    -> ('openmpi', (5,), (5,)) (5 and every 5.x, as in Spack). Other forms are refused."""
    m = SPACK_MPI_SPEC.fullmatch(spec)
    if not m or ("@" in spec and not (m.group(2) or m.group(4))):
        raise StepError(f"stacks.yaml: Spack spec {spec!r}: expected package[@V | @V: | @:V | @V:W]")
    package, low, colon, high = m.groups()
    low, high = (tuple(int(x) for x in v.split(".")) if v else None for v in (low, high))
    return package, low, (low if low and not colon else high)


def version_in_range(version, low, high):
    """Whether a version (text, e.g. 5.0.2) is within inclusive bounds (spack_package_and_range):
    an upper bound 4.1 takes 4.1.x too."""
    v = tuple(int(x) for x in re.findall(r"\d+", version))
    return (low is None or v >= low) and (high is None or v[: len(high)] <= high)


def twin_patches(twin_spec, series):
    """The patches of a twin (stacks.yaml `twins`) for a series; [] for a plain stack."""
    return [twin_spec["patches"][series]] if twin_spec else []


#: how many components the set-up builds at once: a build's serial steps (CMake's
#: configure, Cython, pip) leave cores idle that the other build uses
BUILDS_AT_ONCE = 2


def in_dependency_order(order, after, jobs, workers=BUILDS_AT_ONCE):
    """Ensure every component of `order`, `workers` at a time (a thread each: the builds
    are processes): a free worker takes the first one whose `after` components ({component:
    [component]}) are built. A failure is said at once and stops what comes after it; every
    other build runs to its end, then the first failure is raised. An interrupt (Ctrl-C)
    starts nothing more: the running builds end (their processes get it too), then it is
    raised."""
    outside = {a.label for c in order for a in after.get(c, ()) if a not in order}
    if outside:
        raise ValueError(f"the set-up's plan builds after components it does not build: {', '.join(sorted(outside))}")
    state, failures, changed, stop, alive = {}, [], threading.Condition(), threading.Event(), []

    def stopped(comp):  # comes after a failure, directly or through another
        return any(state.get(a) == "failed" or (a not in state and stopped(a)) for a in after.get(comp, ()))

    def take():  # under the lock: the next component to build, or None when none is left
        while not stop.is_set():
            pending = [c for c in order if c not in state and not stopped(c)]
            ready = [c for c in pending if all(state.get(a) == "done" for a in after.get(c, ()))]
            if ready or not pending:
                return ready[0] if ready else None
            changed.wait()
        return None

    def running():  # under the lock: the workers started that have not ended
        return [t for t in alive if t.ident is not None]

    def work():
        try:
            build_each()
        finally:
            with changed:
                alive.remove(threading.current_thread())
                changed.notify_all()

    def build_each():
        while True:
            with changed:
                comp = take()
                if comp is None:
                    return
                state[comp] = "running"
            result = "failed"
            try:
                comp.ensure(jobs)
                result = "done"
            except BaseException as err:  # noqa: BLE001 (raised once the other builds have ended)
                failures.append(err)
                if len(threads) > 1 and not stop.is_set():  # said now: the other builds may run for minutes more
                    info(f"error: {err}\n(the builds that do not need it go on to their end, then the set-up stops)")
            finally:
                with changed:
                    state[comp] = result
                    changed.notify_all()

    threads = [threading.Thread(target=work, name=f"build-{i}") for i in range(max(1, min(workers, len(order))))]
    try:  # waits on the condition, not Thread.join: an interrupted join leaves a thread that
        # still runs marked as ended
        for thread in threads:
            with changed:
                alive.append(thread)
            thread.start()
        with changed:
            while running():
                changed.wait()
    except BaseException:
        with changed:  # nothing more starts; the running builds end (Ctrl-C reached them too)
            stop.set()
            changed.notify_all()
            while running():
                changed.wait()
        raise
    if failures:
        raise failures[0]


@functools.cache
def toolchain():
    """Compiler and CMake versions (part of cache keys); asked once per run."""
    return {"compiler": build.first_line(["cc", "--version"]), "cmake": build.first_line(["cmake", "--version"])}


class Stack:
    """<mpi>-hdf5-<series>, or its patched twin <mpi>-hdf5-<series>-<variant> (stacks.yaml
    `twins`), whose base is the plain stack of the same MPI and series."""

    def __init__(self, mpi, series, series_spec, variant=None, twin_spec=None, base=None):
        self.mpi = mpi
        self.series = series
        self.spec = series_spec
        self.variant = variant
        self.twin = twin_spec or {}
        self.base = base
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

    def status(self):
        """(built?, detail), checking the HDF5 install on disk."""
        desc = self.description()
        if not desc:
            return False, "not set up"
        reason = build.verify(desc["hdf5_prefix"], os.path.basename(desc["hdf5_prefix"]).rsplit("-", 1)[-1])
        if reason:
            return False, f"HDF5 install damaged: {reason}"
        detail = f"HDF5 {desc['hdf5_version']}, {desc['mpi_description']} {desc['mpi_version']}"
        tools = desc["tools"]
        if tools.get("origin") == "debian":
            reason = build.verify(tools["prefix"], os.path.basename(tools["prefix"]).rsplit("-", 1)[-1])
            if reason:
                return False, f"its HDF5 tools are damaged: {reason}"
            packages = tools["debian_packages"]
            detail += (
                f"; tools: HDF5 {tools['hdf5_version']}'s, Debian's {packages[0]['package']} {packages[0]['version']}"
            )
        return True, detail


class HDF5Component(build.Component):
    """HDF5 built for one MPI (Stacks.hdf5_component): a Component that also knows its
    series, its version, its source (sources.obtain) and its MPI's probe (MPI.check)."""

    def __init__(self, *, series, version, source, mpi_check, **component):
        super().__init__(**component)
        self.series = series
        self.version = version
        self.source = source
        self.mpi_check = mpi_check


class Stacks:
    """All stacks of stacks.yaml and how to build them."""

    def __init__(self, config=None, tarballs=None):
        self.config = config or load_config()
        self.mpis = {name: MPI(name, spec) for name, spec in self.config["mpis"].items()}
        self.series = {str(k): v for k, v in self.config["hdf5"].items()}
        self.tarballs = tarballs or {}
        plain = [Stack(mpi, series, spec) for series, spec in self.series.items() for mpi in self.mpis.values()]
        self._plain = {(stack.mpi.name, stack.series): stack for stack in plain}  # twins' bases
        self.stacks = {stack.name: stack for stack in plain}
        for variant, twin in (self.config.get("twins") or {}).items():
            for series, spec in self.series.items():
                for mpi_name in twin["mpis"]:
                    if series in twin["patches"]:
                        base = self._plain[(mpi_name, series)]
                        stack = Stack(base.mpi, series, spec, variant, twin, base)
                        self.stacks[stack.name] = stack
        self._sources = {}
        self._tools = {}
        self._hdf5 = {}
        self._packages = {}
        self._python = {}

    def names(self):
        return list(self.stacks)

    def all(self):
        """Every stack (Stack), in the order of names()."""
        return list(self.stacks.values())

    def defaults(self):
        """The stacks set up when none is named: those of MPIs that are not optional."""
        return [s for s in self.stacks.values() if not s.mpi.optional]

    def in_use(self):
        """The default stacks and every optional one that is set up: what runs when no
        stack is named."""
        return [s for s in self.stacks.values() if not s.mpi.optional or s.description()]

    def get(self, name):
        """The stack of this name: where a name from the command line becomes a Stack."""
        if name not in self.stacks:
            raise StepError(f"unknown stack {name!r}; the stacks are: {', '.join(self.stacks)}")
        return self.stacks[name]

    def built(self, name):
        """The description (stack.json) of the stack of this name, which is set up."""
        desc = self.get(name).description()
        if not desc:
            raise StepError(f"stack {name} is not built: ./h5stack setup {name}")
        return desc

    def mpi(self, name):
        """The MPI of this name (stacks.yaml `mpis`): where a name from the command line becomes an MPI."""
        if name not in self.mpis:
            raise StepError(f"unknown MPI {name!r}; the MPIs are: {', '.join(self.mpis)}")
        return self.mpis[name]

    # -- HDF5 --------------------------------------------------------------
    def source(self, series):
        if series not in self._sources:
            self._sources[series] = sources.obtain(series, self.series[series]["sources"], self.tarballs.get(series))
            info(f"HDF5 {series}: source is the {self._sources[series].origin}")
        return self._sources[series]

    def debian_tools(self, series):
        """None when a series' stacks carry the HDF5 tools of their own build (stacks.yaml
        `tools: build`, from a source with tools/), else the tools they take from Debian's
        binary packages (debtools.DebianTools): `debian_tools`, for a source without
        tools/ (the 2.x crate)."""
        if series not in self._tools:
            spec, src = self.series[series], self.source(series)
            tools = None
            if spec.get("tools") == "build" and not src.has_tools:
                if not spec.get("debian_tools"):
                    raise StepError(
                        f"HDF5 {series}: the {src.origin} has no tools/ and stacks.yaml names no debian_tools"
                    )
                tools = debtools.DebianTools(spec["debian_tools"], f"stacks.yaml (hdf5.{series}.debian_tools)")
                info(
                    f"HDF5 {series}: the {src.origin} carries no tools/: the stacks take HDF5's tools from {tools.label}"
                )
            self._tools[series] = tools
        return self._tools[series]

    def hdf5_component(self, series, mpi, variant=None):
        """HDF5 of a series for an MPI (a twin's, patched, with its variant); one per run."""
        key = (series, mpi.name, variant)
        if key not in self._hdf5:
            self._hdf5[key] = self._new_hdf5_component(series, mpi, variant)
        return self._hdf5[key]

    def _new_hdf5_component(self, series, mpi, variant):
        src = self.source(series)
        mpi_check = mpi.check()
        tools = self.series[series].get("tools") == "build" and src.has_tools
        options = self._hdf5_options(mpi, mpi_check, tools)
        patches = twin_patches((self.config.get("twins") or {}).get(variant, {}), series)
        inputs = {
            "source_sha256": src.sha256,
            "patches": {p: sources.sha256_of(os.path.join(paths.PATCHES_DIR, p)) for p in patches},
            "cmake_options": dict(options),
            **toolchain(),
            **mpi.identity(),
        }

        def prepare(work):
            return src.unpack_patched([os.path.join(paths.PATCHES_DIR, p) for p in patches], work)

        required = ["lib/libhdf5.so", "lib/libhdf5_hl.so", "bin/h5pcc", "include/hdf5.h"]
        if tools:
            required += ["bin/h5dump", "bin/h5diff"]
        version = src.hdf5_version
        return HDF5Component(
            name=f"hdf5-{version}-{mpi.name}{f'-{variant}' if variant else ''}",
            label=f"HDF5 {version} ({mpi.name}{', ' + variant if variant else ''})",
            inputs=inputs,
            prepare=prepare,
            cmake_options=options,
            env=mpi.build_env(),
            required=required,
            series=series,
            version=version,
            source=src,
            mpi_check=mpi_check,
        )

    def _hdf5_options(self, mpi, mpi_check, tools):
        """HDF5's CMake options (stacks.yaml `hdf5_cmake_options`) for an MPI (mpi_check:
        its probe), with HDF5's tools or without."""
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
        return options

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
            prepare=lambda work: base.source.unpack_patched([patch], work),
            cmake_options=options,
            env=stack.mpi.build_env(),
            required=["lib/libhdf5.so"],
            keep_build=True,
        )
        self._hdf5[key] = comp
        return comp

    def netcdf_component(self, stack):
        """netCDF-C, part of a plain stack (stacks.yaml `netcdf_builds`), built against its
        HDF5 and MPI, the source and build trees kept (the tests compile netCDF's test
        programs from them); None for a twin or a series not listed."""
        spec = self.config.get("netcdf_builds") or {}
        if stack.variant or stack.series not in spec.get("series", []):
            return None
        key = ("netcdf", stack.series, stack.mpi.name)
        if key in self._hdf5:
            return self._hdf5[key]
        hdf5 = self.hdf5_component(stack.series, stack.mpi)
        entry = spec["source"]
        options = {k: str(v) for k, v in spec["cmake_options"].items()}
        options.update(
            CMAKE_C_COMPILER=stack.mpi.command("mpicc"),
            HDF5_ROOT=hdf5.prefix,
            NETCDF_MPIEXEC=stack.mpi.command("mpiexec"),
        )
        inputs = {"source_sha256": sources.pinned(entry), "cmake_options": options, "hdf5_key": hdf5.key,
                  **toolchain(), **stack.mpi.identity()}  # fmt: skip

        def prepare(work):
            archive = sources.fetch_cached(entry, f"netCDF-C {entry['upstream_version']}")
            return sources.Source(archive, sources.pinned(entry), entry["package"]).unpack(os.path.join(work, "src"))

        comp = build.Component(
            name=f"netcdf-{entry['upstream_version']}-{stack.mpi.name}-hdf5-{stack.series}",
            label=f"netCDF-C {entry['upstream_version']} ({stack.name})",
            inputs=inputs,
            prepare=prepare,
            cmake_options=options,
            env=stack.mpi.build_env(),
            required=["lib/libnetcdf.so", "bin/ncdump", "include/netcdf_par.h"],
            keep_build=True,
        )
        self._hdf5[key] = comp
        return comp

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
            "vfd_common_sha256": build.tree_sha256(paths.VFD_COMMON_DIR),
            "version_sha256": sources.sha256_of(paths.VERSION_FILE),
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
            prepare=lambda work: build.copy_package(pkg_dir, paths.VFD_COMMON_DIR, work),
            cmake_options=options,
            env={**stack.mpi.build_env(), **stack.mpi.run_env()},
            keep_build=True,
        )
        return self._packages[memo]

    # -- Python: mpi4py, parallel h5py, the repository's package (python/) -------
    def python_components(self, stack):
        """The stack's Python components, in PYTHONPATH order. A twin uses its base's
        h5py: the same ABI (soname), and its own libhdf5 comes first on LD_LIBRARY_PATH."""
        key = (stack.mpi.name, stack.series)
        if key not in self._python:
            mpi4py = pybuild.mpi4py_component(stack.mpi)
            h5py = pybuild.h5py_component(stack.mpi, self.hdf5_component(stack.series, stack.mpi), mpi4py)
            self._python[key] = [pybuild.h5vfd_component(), h5py, mpi4py]
        return self._python[key]

    # -- set-up -------------------------------------------------------------
    def needed_stacks(self, stacks):
        """These stacks and the twins' bases, whose programs they borrow; bases first."""
        order = []
        for stack in stacks:
            if stack.base and stack.base not in order:
                order.append(stack.base)
            if stack not in order:
                order.append(stack)
        return order

    def needed_hdf5(self, stacks):
        """HDF5 builds (series, mpi, variant) for these stacks, bases first."""
        return list(dict.fromkeys((s.series, s.mpi.name, s.variant) for s in self.needed_stacks(stacks)))

    def stack_packages(self, stack):
        """The projects of packages/ built into a stack (a twin leaves some out)."""
        skip = set(stack.twin.get("without_packages", []))
        return [d for d in self.package_dirs() if os.path.basename(d) not in skip]

    def setup(self, stacks=None, jobs=None):
        """Set up these stacks (Stack; default: the default ones) and those they borrow from."""
        stacks = stacks or self.defaults()
        t0 = time.monotonic()
        with paths.locked("setup"):
            self._setup(stacks, jobs)
        info(f"set-up of {len(stacks)} stack(s) done in {time.monotonic() - t0:.0f} s")

    def _setup(self, stacks, jobs):
        needed = self.needed_stacks(stacks)
        for mpi in dict.fromkeys(s.mpi for s in needed):
            mpi.install()
        for series in dict.fromkeys(s.series for s in needed):
            tools = self.debian_tools(series)
            if tools:
                tools.ensure()
        order, after = self.build_plan(needed)
        info(f"set-up: {len(order)} components, {BUILDS_AT_ONCE} at a time, each once those it needs are built")
        in_dependency_order(order, after, jobs)
        for stack in needed:
            self.write_stack_dir(stack)

    def build_plan(self, stacks):
        """(every component these stacks (bases first) build, in the order they are taken,
        {component: the components it is built after}). HDF5 first, then each stack's
        packages, netCDF-C, HDF5's test programs, mpi4py, h5py, the MPIs' lists taken in
        turn; a component after what it links to (packages, netCDF-C, h5py: their HDF5;
        h5py: mpi4py) and after the plain HDF5 whose objects it takes from the compiler
        cache (a twin's HDF5, HDF5's test programs). The components are made here, in one
        thread: each source is fetched once."""
        lists, after, made = {}, {}, {}

        def the(comp):  # one object per entry (h5vfd: every stack's; a twin's Python: its base's)
            return made.setdefault(comp.prefix, comp)

        def add(own, comp, *before):
            comp, before = the(comp), [the(b) for b in before if b is not None]
            if comp not in after:
                own.append(comp)
                after[comp] = [b for b in before if b is not comp]

        for mpi_name in dict.fromkeys(s.mpi.name for s in stacks):
            own, mine = lists.setdefault(mpi_name, []), [s for s in stacks if s.mpi.name == mpi_name]
            for series, name, variant in self.needed_hdf5(mine):  # a twin's after its plain one
                mpi = self.mpis[name]
                add(own, self.hdf5_component(series, mpi, variant), self.hdf5_component(series, mpi))
            for stack in mine:
                hdf5 = self.hdf5_component(stack.series, stack.mpi, stack.variant)
                plain = self.hdf5_component(stack.series, stack.mpi)
                for pkg_dir in self.stack_packages(stack):
                    add(own, self.package_component(pkg_dir, stack), hdf5)
                for comp in (self.netcdf_component(stack), self.hdf5_tests_component(stack)):
                    if comp:
                        add(own, comp, plain)
                h5vfd, h5py, mpi4py = self.python_components(stack)
                add(own, mpi4py)
                add(own, h5py, plain, mpi4py)
                add(own, h5vfd)
        order = [c for turn in itertools.zip_longest(*lists.values()) for c in turn if c is not None]
        return order, after

    def write_stack_dir(self, stack):
        stackdir.write(self, stack)
