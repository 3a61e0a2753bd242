# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""HDF5's serial tools from Debian's binary packages, for the stacks whose HDF5 source has
no tools/ (stacks.yaml `hdf5.<series>.debian_tools`: the 2.x crate).

The pinned version of a package (e.g. hdf5-tools of sid) and every package it needs to
run (debarchive.closure: its libhdf5, glibc, ...) come from the suite's signed index in
the archive this machine's apt sources name; each .deb is checked against the sha256 and
size the index gives and unpacked with `dpkg-deb -x` (no maintainer script runs) into
one tree, opt/debian-<package>-<version>-<key>/:

  root/           the packages' files as Debian installs them (usr/bin/h5dump, usr/lib/...)
  bin/<program>   a launcher for each program of the pinned package's usr/bin
  tools.json      what the tree is: the packages (name, version, sha256), the programs and
                  the HDF5 version its h5dump reports
  .h5stack-manifest.json  every file's size and sha256, written last (build.py)

The key covers the packages' names, versions and sha256s and the launcher's text. The tree
is made in a temporary directory beside it, checked, then renamed into place. The packages
a tree is made of are recorded when they are first resolved, in
sources/debian/<package>_<version>_<suite>_<arch>.json, with their .debs beside it: a warm
set-up, or a damaged tree made again, needs no network; where the archive no longer serves
a recorded package, the suite's index is read again. That part (DebianPackages: the record,
the .debs, unpacking them) also makes Apptainer's tree (lib/h5stack/machine/apptainer.py).

The programs need the suite's glibc (sid's 2.x tools ask for 2.38; Debian 12 has 2.36):
a launcher runs its program with the tree's own dynamic loader, `ld.so --inhibit-cache
--library-path <the tree's library directories>`, and a tree whose programs would load a
library of the host is refused when it is made. The launchers find the tree from their
own path: a copy elsewhere (an image) runs as it is.

HDF5_PLUGIN_PATH: the launchers set it to the tree's plugin directory of Debian's serial
libhdf5 (usr/lib/<triplet>/hdf5/serial/plugins, that library's built-in default moved into
the tree; empty unless a package of the tree fills it). Never a stack's plugins/: those
drivers and filters are built against the stack's parallel libhdf5 (two libhdf5 in one
process); never the host's default directory either. So the tools read files with HDF5's
own drivers only: `HDF5_DRIVER=multifile h5dump` fails, a multifile file is merged
first (`h5mf merge`). LD_PRELOAD (a library of the host) is not passed on; GCONV_PATH names
the tree's gconv modules (they belong to its glibc).
"""

import functools
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from h5stack.base import paths
from h5stack.base.ui import StepError, fmt_seconds, info
from h5stack.stacks import build, debarchive, sources

#: a program's launcher, in <tree>/bin/; {root}-relative paths, found from the launcher's own path
LAUNCHER = """#!/bin/sh
# {program} of Debian's {package} {version} ({suite}), run by the dynamic loader and
# with the libraries of ../root, not the host's (lib/h5stack/stacks/debtools.py).
# HDF5_PLUGIN_PATH: the plugin directory of that libhdf5, never plugins built against
# another libhdf5; LD_PRELOAD, a library of the host, is not passed on.
root=${{0%/*}}/../root
HDF5_PLUGIN_PATH=$root/{libdir}/hdf5/serial/plugins
GCONV_PATH=$root/{libdir}/gconv
export HDF5_PLUGIN_PATH GCONV_PATH
unset LD_PRELOAD
exec "$root/{loader}" --inhibit-cache --library-path "{library_path}" --argv0 "$0" "$root/usr/bin/{program}" "$@"
"""

DESCRIPTION = "tools.json"
REQUIRED = ("h5dump", "h5diff")  # programs a tree must offer


@functools.cache
def debian_architecture():
    """This machine's Debian architecture (dpkg --print-architecture), e.g. amd64."""
    try:
        out = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as err:
        raise StepError(f"dpkg --print-architecture failed: {err}") from None
    return out.stdout.strip()


def package_list(packages):
    """[[name, version, sha256], ...] of packages (stanzas), sorted: what a tree's key covers."""
    return sorted([p["Package"], p["Version"], p["SHA256"]] for p in packages)


def tree_key(packages):
    """The key of a tree of these packages (stanzas: Package, Version, SHA256)."""
    return build.compute_key({"debian_packages": package_list(packages), "launcher": LAUNCHER})


def programs_of(deb):
    """The names in usr/bin/ of a .deb (dpkg-deb -c), files and links."""
    proc = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True)
    if proc.returncode != 0:
        raise StepError(f"dpkg-deb -c {deb}: {proc.stderr.strip()}")
    names = []
    for line in proc.stdout.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[0][0] in "-l":
            path = fields[5].split(" -> ")[0]
            if re.fullmatch(r"\./usr/bin/[^/]+", path):
                names.append(path.rsplit("/", 1)[1])
    return sorted(names)


def loader_layout(root):
    """(the directories of the tree's libraries, its dynamic loader), relative to root:
    where its libc.so.6 is (usr/lib/<triplet>, lib/<triplet> before Debian merged /usr)."""
    libcs = sorted(glob.glob(os.path.join(root, "usr", "lib", "*", "libc.so.6")))
    libcs += sorted(glob.glob(os.path.join(root, "lib", "*", "libc.so.6")))
    if not libcs:
        raise StepError(f"{root}: no usr/lib/<triplet>/libc.so.6: the packages bring no C library")
    triplet = os.path.basename(os.path.dirname(libcs[0]))
    dirs = [d for d in (f"usr/lib/{triplet}", f"lib/{triplet}") if os.path.isdir(os.path.join(root, d))]
    loaders = sorted(p for d in dirs for p in glob.glob(os.path.join(root, d, "ld-linux*.so.*")))
    if not loaders:
        raise StepError(f"{root}: no dynamic loader (ld-linux*.so.*) beside {os.path.relpath(libcs[0], root)}")
    return dirs, os.path.relpath(loaders[0], root)


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def host_libraries(root, dirs, loader, program):
    """The libraries a program of the tree would load from outside it (its loader's
    --list, with the launchers' options), or 'not found' lines."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LD_")}
    library_path = ":".join(os.path.join(root, d) for d in dirs)
    argv = [os.path.join(root, loader), "--inhibit-cache", "--library-path", library_path, "--list", program]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise StepError(f"{' '.join(argv)} (exit {proc.returncode}): {(proc.stdout + proc.stderr).strip()[-500:]}")
    outside, inside = [], os.path.realpath(root) + os.sep
    for line in proc.stdout.splitlines():
        m = re.search(r"=>\s+(.*?)\s+\(0x", line)
        if "not found" in line:
            outside.append(line.strip())
        elif m and not os.path.realpath(m.group(1)).startswith(inside):
            outside.append(line.strip())
    return outside


class DebianPackages:
    """A pinned version of a Debian binary package (spec: package, version, suite) and the
    packages it needs to run, recorded with their .debs; where: the place of the pin, for
    messages; skip: dependencies not followed (debarchive.closure), part of the record."""

    def __init__(self, spec, where, skip=()):
        self.package, self.version, self.suite = spec["package"], str(spec["version"]), spec["suite"]
        self.where = where
        self.skip = sorted(skip)
        self.label = f"Debian's {self.package} {self.version} ({self.suite})"
        self._uri = None

    @property
    def store(self):
        return paths.sub("sources", "debian")

    @property
    def record(self):
        """The file that records the packages of the tree (the pinned one and what it needs)."""
        name = f"{self.package}_{self.version}_{self.suite}_{debian_architecture()}.json"
        return os.path.join(self.store, name)

    def recorded(self):
        """The recorded packages (stanzas of the fields closure reads), or None (also when
        they were resolved with other skipped dependencies)."""
        try:
            with open(self.record) as f:
                record = json.load(f)
            packages = record["packages"]
        except (OSError, ValueError, KeyError):
            return None
        if record.get("skip", []) != self.skip:
            return None
        return packages if packages and packages[0].get("Version") == self.version else None

    def _archive(self):
        if self._uri is None:
            uri = sources.debian_archive_uri()
            if not uri:
                raise StepError(f"{self.label}: no Debian archive in this machine's apt sources")
            self._uri = uri.rstrip("/")
        return self._uri

    def resolve(self):
        """The pinned package and every package it needs to run, from the suite's signed
        index (network); recorded for the next set-ups."""
        arch = debian_architecture()
        info(f"{self.label}: reading {self.suite}'s signed index of {arch} packages")
        with tempfile.TemporaryDirectory(dir=self.store) as work:
            found = debarchive.fetch_index(
                self._archive(), self.suite, debarchive.packages_index(arch), work, sources.DEBIAN_KEYRING,
                fields=debarchive.PACKAGE_FIELDS,
            )  # fmt: skip
        index = debarchive.by_name(found)
        try:
            packages = debarchive.closure(index, self.package, self.version, self.suite, self.skip)
        except debarchive.Unresolvable as err:
            raise debarchive.Unresolvable(f"{self.label}: {err}; the version is pinned in {self.where}") from None
        record = {"suite": self.suite, "arch": arch, "packages": packages}
        if self.skip:
            record["skip"] = self.skip
        paths.replace_file(self.record, json.dumps(record, indent=1))
        info(
            f"{self.label}: {len(packages)} packages: " + ", ".join(f"{p['Package']} {p['Version']}" for p in packages)
        )
        return packages

    def deb(self, stanza):
        """The path of a package's .deb in the store: the kept one when its sha256 is the
        index's, else downloaded."""
        path = os.path.join(self.store, os.path.basename(stanza["Filename"]))
        if os.path.exists(path) and sources.sha256_of(path) == stanza["SHA256"]:
            return path
        debarchive.fetch_deb(self._archive(), stanza, path, self.suite)
        return path

    def fetch(self):
        """(the packages, their .debs): the recorded ones with the kept .debs (no network),
        else resolved from the index and downloaded; debarchive.Unresolvable when the index
        no longer lists the pinned version (or what it needs)."""
        packages = self.recorded() or self.resolve()
        try:
            debs = [self.deb(p) for p in packages]
        except StepError as err:  # the archive moved on from a recorded dependency
            info(f"{self.label}: {err}: reading the index again")
            packages = self.resolve()
            debs = [self.deb(p) for p in packages]
        return packages, debs

    def unpack(self, debs, root):
        """Unpack the .debs into root with `dpkg-deb -x` (no maintainer script runs)."""
        for deb in debs:
            proc = subprocess.run(["dpkg-deb", "-x", deb, root], capture_output=True, text=True)
            if proc.returncode != 0:
                raise StepError(f"{self.label}: dpkg-deb -x {deb}: {proc.stderr.strip()}")

    def tree_name(self, key):
        """The name of the tree of these packages under opt/, with its key."""
        return f"debian-{self.package}-{self.version}-{key}"


class DebianTools(DebianPackages):
    """HDF5's tools from a pinned version of a Debian binary package (stacks.yaml
    `debian_tools`: package, version, suite); where: the place of the pin, for messages."""

    # -- the tree ------------------------------------------------------------------
    def prefix_of(self, packages):
        return os.path.join(os.path.realpath(paths.sub("opt")), self.tree_name(tree_key(packages)))

    @property
    def prefix(self):
        """The tree of the recorded packages, or None when none are recorded."""
        packages = self.recorded()
        return self.prefix_of(packages) if packages else None

    def status(self):
        """None when the tree of the recorded packages is complete, else why it is not."""
        packages = self.recorded()
        if not packages:
            return "not set up"
        return build.verify(self.prefix_of(packages), tree_key(packages), [f"bin/{p}" for p in REQUIRED])

    def ensure(self):
        """The tree's prefix, made unless a complete one is there."""
        packages = self.recorded()
        if packages and self.status() is None:
            info(f"{self.label}: cached ({self.prefix_of(packages)})")
            return self.prefix_of(packages)
        t0 = time.monotonic()
        packages, debs = self.fetch()
        prefix = self.prefix_of(packages)
        self._make(prefix, packages, debs, t0)
        reason = self.status()
        if reason is not None:
            raise StepError(f"{self.label}: the fresh tree {prefix} is incomplete: {reason}")
        info(f"{self.label}: {len(debs)} packages unpacked into {prefix} in {fmt_seconds(time.monotonic() - t0)}")
        return prefix

    def _make(self, prefix, packages, debs, t0):
        tmp = tempfile.mkdtemp(dir=os.path.dirname(prefix), prefix=os.path.basename(prefix) + ".")
        try:
            root = os.path.join(tmp, "root")
            os.makedirs(root)
            self.unpack(debs, root)
            dirs, loader = loader_layout(root)
            os.makedirs(os.path.join(root, dirs[0], "hdf5", "serial", "plugins"), exist_ok=True)
            programs = self._launchers(tmp, programs_of(debs[0]), dirs, loader)
            version = self._check(tmp, programs, dirs, loader)
            described = {
                "package": self.package, "version": self.version, "suite": self.suite,
                "arch": debian_architecture(), "hdf5_version": version, "programs": programs,
                "debian_packages": [{"package": p["Package"], "version": p["Version"], "sha256": p["SHA256"]}
                                    for p in packages],
            }  # fmt: skip
            with open(os.path.join(tmp, DESCRIPTION), "w") as f:
                json.dump(described, f, indent=1)
            build.write_manifest(tmp, tree_key(packages), os.path.basename(prefix), described, time.monotonic() - t0)
            if os.path.exists(prefix):
                info(f"{self.label}: the tree in {prefix} is damaged ({self.status()}): made again")
                shutil.rmtree(prefix)
            os.rename(tmp, prefix)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _launchers(self, tmp, names, dirs, loader):
        """Write bin/<name> for each ELF program of the pinned package; their names."""
        root = os.path.join(tmp, "root")
        os.makedirs(os.path.join(tmp, "bin"))
        programs = [n for n in names if is_elf(os.path.join(root, "usr", "bin", n))]
        for name in programs:
            path = os.path.join(tmp, "bin", name)
            with open(path, "w") as f:
                f.write(
                    LAUNCHER.format(
                        program=name, package=self.package, version=self.version, suite=self.suite, loader=loader,
                        libdir=dirs[0], library_path=":".join(f"$root/{d}" for d in dirs),
                    )
                )  # fmt: skip
            os.chmod(path, 0o755)
        missing = [p for p in REQUIRED if p not in programs]
        if missing:
            raise StepError(f"{self.label}: the package has no {', '.join(missing)} in usr/bin")
        return programs

    def _check(self, tmp, programs, dirs, loader):
        """Every program loads the tree's libraries only; h5dump runs: the HDF5 version it
        reports."""
        root = os.path.join(tmp, "root")
        for name in programs:
            outside = host_libraries(root, dirs, loader, os.path.join(root, "usr", "bin", name))
            if outside:
                raise StepError(
                    f"{self.label}: {name} would load libraries the packages do not bring: " + "; ".join(outside)
                )
        proc = subprocess.run([os.path.join(tmp, "bin", "h5dump"), "--version"], capture_output=True, text=True)
        m = re.search(r"Version (\d+\.\d+\.\d+)", proc.stdout)
        if proc.returncode != 0 or not m:
            raise StepError(f"{self.label}: h5dump --version (exit {proc.returncode}): {proc.stdout}{proc.stderr}")
        return m.group(1)

    def description(self):
        """What stack.json's `tools` says of the tree (tools.json), with its prefix."""
        prefix = self.prefix
        with open(os.path.join(prefix, DESCRIPTION)) as f:
            described = json.load(f)
        return {
            "origin": "debian",
            "hdf5_version": described["hdf5_version"],
            "prefix": prefix,
            "source": f"Debian {self.suite}'s binary packages {self.package} {self.version} and what it needs to run",
            "debian_packages": described["debian_packages"],
            "programs": described["programs"],
        }
