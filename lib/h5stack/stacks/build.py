# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Build a project (CMake here; pip in pybuild.py) into an immutable, keyed prefix under
$H5STACK_HOME/opt/.

A component's key is the sha256 of everything that determines its result (source
checksum, patches, CMake options, compiler, MPI, CMake version, dependencies' keys).
Its prefix is opt/<name>-<key>/. A finished prefix carries .h5stack-manifest.json,
written last, listing every installed file with its size and sha256: a prefix whose
manifest is missing or does not match its files (a deleted or truncated library,
an interrupted install) is reported, removed and rebuilt, never used.

Builds run in build/<name>-<key>/ (removed after success), install with DESTDIR
into a staging directory and are moved into place in one rename.
"""

import hashlib
import json
import os
import shutil
import subprocess
import time

from h5stack.base import paths
from h5stack.base.ui import StepError, fmt_seconds, info, run_logged
from h5stack.stacks.sources import sha256_of

MANIFEST = ".h5stack-manifest.json"
BUILDER_VERSION = 1  # bump to rebuild everything after a change in how we build


def compute_key(inputs):
    blob = json.dumps({"builder": BUILDER_VERSION, **inputs}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def scan(prefix):
    """{relative path: ['link', target] | ['file', size, sha256]} for every file below prefix."""
    files = {}
    for dirpath, dirnames, filenames in os.walk(prefix):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, prefix)
            if rel == MANIFEST:
                continue
            if os.path.islink(full):
                files[rel] = ["link", os.readlink(full)]
            else:
                files[rel] = ["file", os.path.getsize(full), sha256_of(full)]
    return files


def verify(prefix, key, required=()):
    """None if prefix is a complete install with this key, else the reason it is not."""
    manifest_path = os.path.join(prefix, MANIFEST)
    if not os.path.isdir(prefix):
        return "not built"
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as err:
        return f"no valid manifest ({err.__class__.__name__}): an interrupted build"
    if manifest.get("key") != key:
        return f"manifest key {manifest.get('key')} is not {key}"
    recorded = manifest.get("files", {})
    for rel in required:
        if rel not in recorded:
            return f"{rel} was never installed"
    for rel, entry in recorded.items():
        full = os.path.join(prefix, rel)
        if entry[0] == "link":
            if not os.path.islink(full) or os.readlink(full) != entry[1]:
                return f"{rel}: symbolic link missing or changed"
            continue
        if not os.path.isfile(full) or os.path.islink(full):
            return f"{rel} is missing"
        if os.path.getsize(full) != entry[1]:
            return f"{rel} has size {os.path.getsize(full)}, expected {entry[1]}"
        if sha256_of(full) != entry[2]:
            return f"{rel} has changed (sha256 mismatch)"
    return None


def write_manifest(prefix, key, name, inputs, seconds):
    """Write prefix's manifest (what verify checks): last, and atomically."""
    manifest = {
        "key": key,
        "name": name,
        "inputs": inputs,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "build_seconds": round(seconds, 1),
        "files": scan(prefix),
    }
    tmp = os.path.join(prefix, MANIFEST + ".part")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(prefix, MANIFEST))


class Component:
    """A CMake project to build into a keyed prefix.

    name      file-system name without the key, e.g. 'hdf5-1.14.6-mpich'
    label     what progress messages call it
    inputs    dict of everything that determines the result (hashed into the key)
    prepare   callable(work_dir) -> source dir; unpacks/patches only on a cache miss
    cmake_options, env: for the configure step; `required`: files that must be installed
    keep_build  keep the build tree (build/<name>-<key>/build) after installing, for
                the project's own tests (ctest); it is part of the cache entry
    """

    def __init__(self, name, label, inputs, prepare, cmake_options=None, env=None, required=(), keep_build=False):
        self.name = name
        self.label = label
        self.inputs = inputs
        self.prepare = prepare
        self.cmake_options = dict(cmake_options or {})
        self.env = dict(env or {})
        self.required = list(required)
        self.keep_build = keep_build
        self.key = compute_key(inputs)
        # real paths: the same entry has the same path however $H5STACK_HOME is reached
        self.prefix = os.path.join(os.path.realpath(paths.sub("opt")), f"{name}-{self.key}")
        self.work = os.path.join(os.path.realpath(paths.sub("build")), f"{name}-{self.key}")
        self.build_dir = os.path.join(self.work, "build")

    def status(self):
        reason = verify(self.prefix, self.key, self.required)
        if reason is None and self.keep_build:
            reason = self._build_tree_problem()
        return reason

    def _build_tree_problem(self):
        """Why the kept build tree cannot serve ctest, or None: it must exist and name
        sources inside the cache, never those of the checkout that happened to build it."""
        cache = os.path.join(self.build_dir, "CMakeCache.txt")
        if not os.path.exists(cache):
            return f"its build tree {self.build_dir} is gone"
        with open(cache) as f:
            home = next((line.split("=", 1)[1].strip() for line in f if line.startswith("CMAKE_HOME_DIRECTORY:")), "")
        if os.path.commonpath([self.work, os.path.realpath(home or "/")]) != self.work:
            return f"its build tree names sources outside the cache ({home})"
        return None

    def ensure(self, jobs=None):
        """Return the prefix, building it unless a verified install is cached."""
        reason = self.status()
        if reason is None:
            info(f"{self.label}: cached ({self.prefix})")
            return self.prefix
        if os.path.exists(self.prefix):
            info(f"{self.label}: cached install is damaged ({reason}); removing and rebuilding")
            shutil.rmtree(self.prefix)
        self._build(jobs or os.cpu_count() or 1)
        reason = self.status()
        if reason is not None:
            raise StepError(f"{self.label}: the fresh install in {self.prefix} is incomplete: {reason}")
        return self.prefix

    def _build(self, jobs):
        work = self.work
        if os.path.exists(work):
            shutil.rmtree(work)
        os.makedirs(work)
        log = paths.log_file(f"{self.name}-{self.key}.log")
        if os.path.exists(log):
            os.remove(log)
        info(f"{self.label}: building (log: {log})")
        t0 = time.monotonic()
        try:
            src = self.prepare(work)
        except StepError as err:
            raise StepError(f"{self.label}: {err}") from None
        stage = os.path.join(work, "stage")
        staged = self._install(src, stage, log, dict(os.environ, **self.env), jobs)
        if not os.path.isdir(staged):
            raise StepError(f"{self.label}: the install put nothing in {staged} (see {log})")
        os.replace(staged, self.prefix)
        write_manifest(self.prefix, self.key, self.name, self.inputs, time.monotonic() - t0)
        if self.keep_build:
            shutil.rmtree(stage, ignore_errors=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
        info(f"{self.label}: built in {fmt_seconds(time.monotonic() - t0)}")

    def _install(self, src, stage, log, env, jobs):
        """Configure, build and install src with DESTDIR=stage: the staged prefix."""
        options = {"CMAKE_INSTALL_PREFIX": self.prefix, **self.cmake_options, **compiler_cache(env)}
        configure = ["cmake", "-S", src, "-B", self.build_dir, "-G", "Ninja"]
        configure += [f"-D{k}={v}" for k, v in options.items()]
        run_logged(configure, log, f"{self.label}: configure", env=env)
        run_logged(["cmake", "--build", self.build_dir, "--parallel", str(jobs)], log, f"{self.label}: build", env=env)
        run_logged(["cmake", "--install", self.build_dir], log, f"{self.label}: install", env=dict(env, DESTDIR=stage))
        return stage + self.prefix


def compiler_cache(env):
    """CMake options that put ccache (when installed) in front of the compilers; sets its
    settings in env. Builds of the same sources with the same compiler and flags (an HDF5
    and its test programs, a plain HDF5 and its patched twin) then compile each unchanged
    file once. Paths under build/ are rewritten relative, so one entry's objects serve
    another's (the source paths in HDF5's error stacks read relative); the compiler is
    identified by what `mpicc -v` prints. It is no input of the cache keys."""
    if not shutil.which("ccache"):
        return {}
    for name in [n for n in env if n.startswith("CCACHE_")]:  # the user's own settings stay out
        del env[name]
    env.update(
        CCACHE_DIR=paths.sub("ccache"),
        CCACHE_CONFIGPATH=os.path.join(paths.sub("ccache"), "ccache.conf"),
        # the compiler is an MPI wrapper script: identify it by what it runs (its -v names
        # the MPI and the C compiler's version), not by the script's time stamp
        CCACHE_COMPILERCHECK="%compiler% -v",
        CCACHE_BASEDIR=os.path.realpath(paths.sub("build")),
        CCACHE_NOHASHDIR="true",
        CCACHE_DEPEND="true",
        CCACHE_MAXSIZE=env.get("CCACHE_MAXSIZE", "4G"),
    )
    return {"CMAKE_C_COMPILER_LAUNCHER": "ccache", "CMAKE_CXX_COMPILER_LAUNCHER": "ccache"}


def copy_source(tree, work):
    """A copy of a source tree of the repository in work/src, built there: the build (a
    kept build tree and its ctest files, pip's in-tree build) then names files of the
    cache, never those of the checkout that happened to build it."""
    src = os.path.join(work, "src")
    shutil.copytree(tree, src, ignore=shutil.ignore_patterns("build", "__pycache__", ".git", "*.egg-info"))
    return src


def copy_package(tree, common, work):
    """copy_source of a package of packages/, with the shared tree `common` beside it
    (work/<its name>), where the package's CMake project finds it (../<its name>), and
    the project's VERSION file (../VERSION)."""
    src = copy_source(tree, work)
    shutil.copytree(common, os.path.join(work, os.path.basename(common)), ignore=shutil.ignore_patterns("build"))
    shutil.copy(paths.VERSION_FILE, os.path.join(work, "VERSION"))
    return src


def first_line(cmd):
    """First line of a command's output, or '' when it cannot run (part of keys)."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    except OSError:
        return ""
    return out.splitlines()[0].strip() if out.strip() else ""


def tree_sha256(root):
    """Checksum of a source tree (paths and contents), e.g. one of packages/ or patches."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("build", "__pycache__", ".git"))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            h.update(os.path.relpath(full, root).encode() + b"\0")
            h.update(sha256_of(full).encode())
    return h.hexdigest()
