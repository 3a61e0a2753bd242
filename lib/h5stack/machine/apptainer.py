# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Apptainer and a Debian base for container images, on this machine, cached.

Apptainer comes from Debian sid's binary package (APPTAINER_PACKAGE; Debian 12 has no
usable one). That build has no setuid starter (APPTAINER_SUID_INSTALL=0), so its programs
find their files relative to their own path and run from any directory. The package and
what its programs load (glibc, libseccomp, libsqlite3: its dependencies and theirs, but
not those of NOT_TAKEN) are resolved from sid's signed index, recorded under
sources/debian/ with their .debs and unpacked as stacks/debtools.py does, into the keyed
tree opt/debian-apptainer-<version>-<key>/ (key: the packages' names, versions and
sha256s, and TREE_RECIPE_VERSION), made in a temporary directory beside it, its manifest
(written last, as in stacks/build.py) checked on every use:

  usr/bin/apptainer, usr/libexec/apptainer/  the programs, run by the tree's own glibc
                                  (patchelf: the tree's loader, its libraries as DT_RPATH)
  usr/lib/<triplet>/              glibc, libgcc, libseccomp, libsqlite3
  etc/apptainer/, var/lib/apptainer/  its configuration and session directory, which
                                  Apptainer looks for in usr/etc and usr/var (links)

A warm set-up needs no network. Only where the archive no longer lists the pinned
package (or what it needs) and none is recorded, Apptainer is built from source instead
(the fallback): from the upstream tarball that sid's source package carries (its .orig,
APPTAINER_SOURCE), fetched through sid's signed index (stacks/sources.py,
stacks/debarchive.py) and kept in sources/, with the `go` on PATH (at least the version
go.mod asks for) or else the pinned Go wheel (requirements/go.txt, stacks/wheels.py); its
Go modules are downloaded into go/mod (the build itself runs with GOPROXY=off), and it
installs into opt/apptainer-<version>-<key>/. An `apptainer` on PATH is used instead of
either when there is one.

The base of the images is a `debootstrap --variant=minbase` tree of a Debian suite from
the archive this machine's apt uses, made once into images/debian-<suite>-<key>/rootfs
with its device nodes removed; `Bootstrap: localimage` builds from that directory in
minutes, with no registry.

Facts of this machine that the commands need (see run_env and ensure_subids): without
CAP_SYS_RESOURCE in the capability bounding set, root's `apptainer exec/run/test` (and a
build's %post and %test) fail unless Apptainer drops that capability
(APPTAINER_DROP_CAPS); `apptainer build --fakeroot` needs subordinate ids for the user
in /etc/subuid and /etc/subgid.
"""

import glob
import os
import pwd
import re
import shutil
import stat
import subprocess
import tempfile
import time

from h5stack.base import paths
from h5stack.base.ui import StepError, fmt_seconds, info, run_logged
from h5stack.machine import apt
from h5stack.stacks import build, debarchive, debtools, sources, wheels

# Debian sid's binary package: Apptainer 1.4.5, the version the fallback builds
APPTAINER_PACKAGE = {"package": "apptainer", "version": "1.4.5-2", "suite": "sid"}
PACKAGE_PIN = "lib/h5stack/machine/apptainer.py (APPTAINER_PACKAGE)"
# Dependencies of the packages that the tree does not take (debarchive.closure's skip).
# The programs Apptainer runs from PATH are this machine's (requirements/
# debian-containers.txt): mksquashfs (squashfs-tools), newuidmap (uidmap). Nothing here
# gives a container a network of its own (containernetworking-plugins: `--net`). Go reads
# the host's certificates (ca-certificates). No program of the tree converts character
# sets with iconv (libc-gconv-modules-extra). The tree's check (host_libraries) refuses a
# program that would load a library the remaining packages do not bring.
NOT_TAKEN = ("ca-certificates", "containernetworking-plugins", "libc-gconv-modules-extra", "squashfs-tools", "uidmap")
TREE_RECIPE_VERSION = 1  # bump to remake the tree after a change in how it is made
APPTAINER = "usr/bin/apptainer"
PATCHED = (APPTAINER, "usr/libexec/apptainer/bin/starter")  # offsetpreload.so: loaded into containers, as it is
REQUIRED = (*PATCHED, "etc/apptainer/apptainer.conf")
REQUIRED_DIRS = ("var/lib/apptainer/mnt/session",)  # empty, so not in the manifest; exec fails without it

# The fallback: Debian sid's source package (its current revision of 1.4.5); its .orig
# tarball is the upstream release.
APPTAINER_SOURCE = {
    "kind": "debian",
    "package": "apptainer",
    "upstream_version": "1.4.5",
    "suite": "sid",
    "sha256": "9eb496fe0e3d98e68e66e8796290fe9f7185315fdf8a3f77b7964ef1f4abbb57",
}
# no setuid starter, said outright: upstream's mconfig infers it only where `unshare -U`
# works, and stops ("Run mconfig with either --with-suid or --without-suid") where it
# does not, e.g. in a chroot, whose processes may not make user namespaces. No CNI network
# plugins (`--net`): nothing here gives a container a network of its own, and they are 16
# more Go programs to build
MCONFIG_OPTIONS = ("--without-suid", "--without-network")
RECIPE_VERSION = 1  # bump to rebuild Apptainer after a change in how it is built
BUILT_REQUIRED = ("bin/apptainer", "libexec/apptainer/bin/starter", "etc/apptainer/apptainer.conf")
BUILT_REQUIRED_DIRS = ("var/apptainer/mnt/session",)
DEBIAN_CONTAINER_REQUIREMENTS = os.path.join(paths.ROOT, "requirements", "debian-containers.txt")

BASE_PACKAGES = ()  # extra packages of the base (debootstrap --include), beyond minbase
BASE_RECIPE_VERSION = 1  # bump to remake the base after a change in how it is made
# left by debootstrap, not wanted in images (a %post that installs runs `apt-get update`)
BASE_EMPTIED = ("var/cache/apt/archives", "var/lib/apt/lists")
BASE_REQUIRED = ("rootfs/usr/bin/sh", "rootfs/usr/bin/apt-get", "rootfs/etc/debian_version")

CAP_SYS_RESOURCE = 24
SUBID_COUNT = 65536
SUBID_START = 200000


def ensure_packages():
    """The Debian packages of requirements/debian-containers.txt (installed when missing)."""
    apt.ensure_packages(DEBIAN_CONTAINER_REQUIREMENTS)


# ---------------------------------------------------------------- Apptainer


def ensure_apptainer():
    """Path of an `apptainer`: the one on PATH, else the tree of Debian's package (cached,
    else made), else, where the archive no longer lists that package, a source build."""
    found = shutil.which("apptainer")
    if found:
        version = build.first_line([found, "--version"])
        info(f"Apptainer: using {found} from PATH ({version or 'version unknown'})")
        return found
    with paths.locked("apptainer"):
        try:
            return debian_apptainer()
        except debarchive.Unresolvable as err:
            info(f"Apptainer: {err}; building Apptainer {upstream_version()} from source instead")
        return built_apptainer()


def installed_apptainer():
    """Path of the `apptainer` that ensure_apptainer would use, without making one (the
    site config reads it: nothing is fetched or built there), or None: the one on PATH, else
    the tree of the recorded packages of Debian's, else a source build."""
    found = shutil.which("apptainer")
    if found:
        return found
    debian = debian_packages()
    recorded = debian.recorded()
    if recorded:
        exe = os.path.join(tree_prefix(debian, recorded)[0], APPTAINER)
        if os.path.exists(exe):
            return exe
    built = sorted(glob.glob(os.path.join(paths.home(), "opt", "apptainer-*", "bin", "apptainer")))
    return built[-1] if built else None


def apptainer_status(prefix, key, required=REQUIRED, dirs=REQUIRED_DIRS):
    """None if prefix is complete with this key (a tree of Debian's package by default,
    the source build with BUILT_REQUIRED, BUILT_REQUIRED_DIRS), else the reason it is not."""
    reason = build.verify(prefix, key, required)
    if reason is None:
        for rel in dirs:
            if not os.path.isdir(os.path.join(prefix, rel)):
                return f"its directory {rel} is missing"
    return reason


# -- from Debian's binary package


def debian_packages(pin=APPTAINER_PACKAGE):
    """The pinned package and what it needs (recorded under sources/debian/, with the .debs)."""
    return debtools.DebianPackages(pin, PACKAGE_PIN, skip=NOT_TAKEN)


def tree_inputs(packages):
    """Everything that determines the tree (hashed into its key)."""
    return {"debian_packages": debtools.package_list(packages), "recipe": TREE_RECIPE_VERSION}


def tree_prefix(debian, packages):
    """(the tree of these packages, its key)."""
    key = build.compute_key(tree_inputs(packages))
    return os.path.join(os.path.realpath(paths.sub("opt")), debian.tree_name(key)), key


def debian_apptainer(pin=APPTAINER_PACKAGE):
    """Path of the `apptainer` of the tree of Debian's package: cached, else made from the
    recorded packages, else from those the index lists (debarchive.Unresolvable when it no
    longer lists the pinned version)."""
    debian = debian_packages(pin)
    label = f"Apptainer {debarchive.upstream_of(debian.version)}"
    t0 = time.monotonic()
    recorded = debian.recorded()
    if recorded:
        prefix, key = tree_prefix(debian, recorded)
        if apptainer_status(prefix, key) is None:
            info(f"{label}: cached ({prefix})")
            return os.path.join(prefix, APPTAINER)
    packages, debs = debian.fetch()  # the kept .debs of the recorded packages, else the index's
    prefix, key = tree_prefix(debian, packages)
    reason = apptainer_status(prefix, key)
    if reason is None:  # resolved again, to the packages of a cached tree
        info(f"{label}: cached ({prefix})")
        return os.path.join(prefix, APPTAINER)
    if os.path.exists(prefix):
        info(f"{label}: the tree in {prefix} is damaged ({reason}); making it again")
        shutil.rmtree(prefix)
    ensure_packages()  # patchelf, and the programs Apptainer runs from PATH
    _make_tree(label, debian, packages, debs, prefix, key, t0)
    reason = apptainer_status(prefix, key)
    if reason is not None:
        raise StepError(f"{label}: the fresh tree in {prefix} is incomplete: {reason}")
    info(
        f"{label}: from Debian {debian.suite}'s package {debian.version} in "
        f"{fmt_seconds(time.monotonic() - t0)} ({prefix})"
    )
    return os.path.join(prefix, APPTAINER)


def relocate(root):
    """Make the unpacked packages in root a tree Apptainer runs from; (the directories of
    its libraries, its dynamic loader), relative to root.

    Apptainer relocates the directories it was built for (prefix /usr) to the parent of
    its bin/: /etc/apptainer and /var/lib/apptainer become usr/etc/... and usr/var/...,
    links to the tree's etc/ and var/. Debian's LIBEXECDIR is /usr/lib/<triplet>, and the
    starter takes the parent of its libexec directory's parent as the prefix (usr/lib):
    its directory moves to usr/libexec/apptainer, a link left where `apptainer` looks."""
    dirs, loader = debtools.loader_layout(root)
    debian_libexec = os.path.join(root, dirs[0], "apptainer")
    if not os.path.isdir(debian_libexec) or os.path.islink(debian_libexec):
        raise StepError(f"{root}: no {dirs[0]}/apptainer: not the layout of Debian's apptainer package")
    libexec = os.path.join(root, "usr", "libexec", "apptainer")
    os.makedirs(os.path.dirname(libexec), exist_ok=True)
    os.rename(debian_libexec, libexec)
    os.symlink(os.path.relpath(libexec, os.path.dirname(debian_libexec)), debian_libexec)
    for name in ("etc", "var"):
        os.symlink(os.path.join("..", name), os.path.join(root, "usr", name))
    return dirs, loader


def patch_command(program, prefix, dirs, loader):
    """patchelf's command that makes a program of the tree at prefix run with its loader and
    libraries: a DT_RPATH (--force-rpath), which, unlike a RUNPATH, also serves the
    libraries' own dependencies (libsqlite3's libm)."""
    libraries = ":".join(os.path.join(prefix, d) for d in dirs)
    return ["patchelf", "--set-interpreter", os.path.join(prefix, loader), "--force-rpath", "--set-rpath", libraries,
            program]  # fmt: skip


def _make_tree(label, debian, packages, debs, prefix, key, t0):
    """Unpack, lay out and patch the tree in a temporary directory beside prefix, with the
    paths of prefix (where it is renamed to, manifest written), then run it there."""
    name = os.path.basename(prefix)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(prefix), prefix=name + ".")
    try:
        debian.unpack(debs, tmp)
        dirs, loader = relocate(tmp)
        for rel in PATCHED:
            outside = debtools.host_libraries(tmp, dirs, loader, os.path.join(tmp, rel))
            if outside:
                raise StepError(f"{label}: {rel} would load libraries the packages do not bring: " + "; ".join(outside))
            proc = subprocess.run(patch_command(os.path.join(tmp, rel), prefix, dirs, loader), capture_output=True,
                                  text=True)  # fmt: skip
            if proc.returncode != 0:
                raise StepError(f"{label}: patchelf {rel}: {proc.stderr.strip()}")
        inputs = dict(tree_inputs(packages), package=debian.package, version=debian.version, suite=debian.suite)
        build.write_manifest(tmp, key, name, inputs, time.monotonic() - t0)
        os.rename(tmp, prefix)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    exe = os.path.join(prefix, APPTAINER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LD_")}
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True, env=env)
    if proc.returncode != 0 or proc.stdout.split()[-1:] != [debarchive.upstream_of(debian.version)]:
        shutil.rmtree(prefix)
        raise StepError(f"{label}: {exe} --version (exit {proc.returncode}): {(proc.stdout + proc.stderr).strip()}")


# -- the fallback: built from source


def upstream_version(entry=APPTAINER_SOURCE):
    """'1.4.5': the upstream version of the source entry (no epoch, no Debian revision)."""
    return entry["upstream_version"]


#: the Go that Apptainer's go.mod asks for (checked again against go.mod when it builds)
GO_MINIMUM = "1.23.6"


def go_version(go="go"):
    """The version of this `go` (default: the one on PATH), e.g. '1.26.8', or None without one."""
    if not shutil.which(go):
        return None
    out = build.first_line([go, "env", "GOVERSION"])
    m = re.match(r"go(\d+(?:\.\d+)*)", out)
    return m.group(1) if m else None


def go_toolchain():
    """(the directory of the `go` that builds Apptainer, its version): the one on PATH when it
    is at least GO_MINIMUM, else the pinned Go wheel (requirements/go.txt), installed into
    its keyed prefix."""
    found = shutil.which("go")
    version = go_version(found) if found else None
    if version and version_tuple(version) >= version_tuple(GO_MINIMUM):
        return os.path.dirname(found), version
    bindir = os.path.join(wheels.go_prefix().ensure(), "go", "bin")
    return bindir, go_version(os.path.join(bindir, "go"))


def version_tuple(text):
    return tuple(int(n) for n in re.findall(r"\d+", text))


def apptainer_inputs(go, entry=APPTAINER_SOURCE, options=MCONFIG_OPTIONS):
    """Everything that determines the source build (hashed into its key)."""
    return {
        "apptainer": upstream_version(entry),
        "source_sha256": entry["sha256"],
        "go": go,
        "mconfig": list(options),
        "recipe": RECIPE_VERSION,
    }


def apptainer_prefix(inputs):
    key = build.compute_key(inputs)
    # real paths: the same entry has the same path however $H5STACK_HOME is reached
    return os.path.join(os.path.realpath(paths.sub("opt")), f"apptainer-{inputs['apptainer']}-{key}"), key


def built_apptainer():
    """Path of the `apptainer` built from source: a verified cached build, else a new build."""
    go_bin, go = go_toolchain()
    if go is None:
        raise StepError(f"Apptainer: {go_bin}/go does not say its version (`go env GOVERSION`)")
    inputs = apptainer_inputs(go)
    prefix, key = apptainer_prefix(inputs)
    label = f"Apptainer {inputs['apptainer']}"
    reason = apptainer_status(prefix, key, BUILT_REQUIRED, BUILT_REQUIRED_DIRS)
    if reason is None:
        info(f"{label}: cached ({prefix})")
        return os.path.join(prefix, "bin", "apptainer")
    if os.path.exists(prefix):
        info(f"{label}: cached install is damaged ({reason}); removing and rebuilding")
        shutil.rmtree(prefix)
    ensure_packages()
    _build_apptainer(label, inputs, prefix, key, go_bin)
    reason = apptainer_status(prefix, key, BUILT_REQUIRED, BUILT_REQUIRED_DIRS)
    if reason is not None:
        raise StepError(f"{label}: the fresh install in {prefix} is incomplete: {reason}")
    return os.path.join(prefix, "bin", "apptainer")


def apptainer_source(entry=APPTAINER_SOURCE):
    """Path of the upstream tarball in $H5STACK_HOME/sources, fetched when missing."""
    return sources.fetch_cached(entry, "Apptainer")


def _build_apptainer(label, inputs, prefix, key, go_bin):
    name = os.path.basename(prefix)
    work = os.path.join(os.path.realpath(paths.sub("build")), name)
    log = paths.log_file(f"{name}.log")
    tarball = apptainer_source()
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    if os.path.exists(log):
        os.remove(log)
    info(f"{label}: building with Go {inputs['go']} (log: {log}; some minutes: Go compiles it all)")
    t0 = time.monotonic()
    src = _unpack(tarball, os.path.join(work, "src"))
    needed = _go_mod_version(src)
    if version_tuple(inputs["go"]) < version_tuple(needed):
        raise StepError(f"{label}: its go.mod needs Go {needed}, {go_bin}/go is {inputs['go']}")
    with open(os.path.join(src, "VERSION"), "w") as f:  # mconfig needs it outside a git clone
        f.write(inputs["apptainer"] + "\n")
    go = os.path.join(go_bin, "go")
    env = dict(
        os.environ,
        PATH=f"{go_bin}:{os.environ.get('PATH', '')}",  # the Makefile calls `go`
        GOCACHE=os.path.join(work, "gocache"),  # its Makefile runs `go clean -cache`
        GOMODCACHE=paths.sub("go", "mod"),
        GOTOOLCHAIN="local",
        # this machine's GOFLAGS, and a module cache that `rm -rf` can remove
        GOFLAGS=" ".join(filter(None, [build.first_line([go, "env", "GOFLAGS"]), "-modcacherw"])),
    )
    stage = os.path.join(work, "stage")
    # Modules come through this machine's Go configuration; the Makefile sets a GOPROXY
    # of its own, so make runs with GOPROXY=off: everything is then in GOMODCACHE.
    steps = [
        (["./mconfig", "-b", "builddir", f"--prefix={prefix}", *MCONFIG_OPTIONS], "configure"),
        ([go, "mod", "download"], "Go modules"),
        (["make", "-C", "builddir", "GOPROXY=off"], "build"),
        (["make", "-C", "builddir", "install", f"DESTDIR={stage}", "GOPROXY=off"], "install"),
    ]
    for cmd, step in steps:
        t = run_logged(cmd, log, f"{label}: {step}", cwd=src, env=env)
        info(f"{label}: {step} done in {fmt_seconds(t)}")
    staged = stage + prefix
    if not os.path.isdir(staged):
        raise StepError(f"{label}: `make install` put nothing in {staged} (see {log})")
    os.replace(staged, prefix)
    build.write_manifest(prefix, key, name, inputs, time.monotonic() - t0)
    shutil.rmtree(work, ignore_errors=True)
    info(f"{label}: built in {fmt_seconds(time.monotonic() - t0)} ({prefix})")


def _unpack(tarball, dest):
    tops = sources.unpack_archive(tarball, dest)
    if len(tops) != 1 or not os.path.isfile(os.path.join(dest, tops[0], "mconfig")):
        raise StepError(f"{tarball}: expected one top-level directory with mconfig, found {tops}")
    return os.path.join(dest, tops[0])


def _go_mod_version(src):
    with open(os.path.join(src, "go.mod")) as f:
        m = re.search(r"^go\s+(\S+)", f.read(), re.M)
    if not m:
        raise StepError(f"{src}/go.mod: no `go` line")
    return m.group(1)


# ---------------------------------------------------------------- this machine's facts


def missing_capabilities(status_text, caps=(CAP_SYS_RESOURCE,)):
    """Those of caps absent from the bounding or effective set in a /proc/<pid>/status text."""
    sets = {}
    for line in status_text.splitlines():
        m = re.match(r"(CapBnd|CapEff):\s*([0-9a-fA-F]+)", line)
        if m:
            sets[m.group(1)] = int(m.group(2), 16)
    if set(sets) != {"CapBnd", "CapEff"}:
        raise StepError("no CapBnd/CapEff lines in the process status: cannot tell the capabilities")
    return [cap for cap in caps if not (sets["CapBnd"] >> cap) & (sets["CapEff"] >> cap) & 1]


def run_env(status_path="/proc/self/status", euid=None):
    """Variables that `apptainer exec/run/test/build` need here (to add to the environment).

    Root's containers get root's capabilities; one this process lacks (CAP_SYS_RESOURCE
    in some sandboxes) makes them fail unless Apptainer drops it.
    """
    if (os.geteuid() if euid is None else euid) != 0:
        return {}
    with open(status_path) as f:
        missing = missing_capabilities(f.read())
    return {"APPTAINER_DROP_CAPS": "CAP_SYS_RESOURCE"} if CAP_SYS_RESOURCE in missing else {}


def subid_ranges(text, user):
    """[(start, count)] of user's lines and of everyone's, from an /etc/subuid text."""
    own, everyone = [], []
    for line in text.splitlines():
        parts = line.strip().split(":")
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
            continue
        rng = (int(parts[1]), int(parts[2]))
        everyone.append(rng)
        if parts[0] == user:
            own.append(rng)
    return own, everyone


def free_subid_start(ranges, start=SUBID_START, count=SUBID_COUNT):
    """The first start >= start (in steps of count) overlapping none of ranges."""
    while any(start < s + n and s < start + count for s, n in ranges):
        start += count
    return start


def ensure_subids(files=("/etc/subuid", "/etc/subgid"), euid=None):
    """Subordinate ids for `apptainer build --fakeroot`: True when the user has them.

    As root, adds a `root:<start>:65536` line (200000 unless taken) to each file that
    has none for root. Otherwise only says what an administrator would have to add.
    """
    euid = os.geteuid() if euid is None else euid
    user = "root" if euid == 0 else pwd.getpwuid(euid).pw_name
    lacking = []
    for path in files:
        text = ""
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
        own, everyone = subid_ranges(text, user)
        if any(n >= SUBID_COUNT for _, n in own):
            continue
        if euid != 0:
            lacking.append(path)
            continue
        line = f"root:{free_subid_start(everyone)}:{SUBID_COUNT}"
        with open(path, "a") as f:
            f.write(("" if not text or text.endswith("\n") else "\n") + line + "\n")
        info(f"added `{line}` to {path} (`apptainer build --fakeroot` as root needs subordinate ids)")
    if lacking:
        info(
            f"{user} has no range of {SUBID_COUNT} subordinate ids in {' and '.join(lacking)}: "
            f"`apptainer build --fakeroot` needs one (an administrator adds a `{user}:START:{SUBID_COUNT}` "
            "line to /etc/subuid and /etc/subgid, e.g. with `usermod --add-subuids/--add-subgids`); "
            "without it Apptainer falls back to a root-mapped user namespace with a single id"
        )
        return False
    return True


# ---------------------------------------------------------------- the Debian base


def base_inputs(suite, archive, packages=BASE_PACKAGES):
    return {
        "suite": suite,
        "archive": archive,
        "packages": sorted(packages),
        "variant": "minbase",
        "emptied": list(BASE_EMPTIED),
        "recipe": BASE_RECIPE_VERSION,
    }


def base_entry(inputs):
    key = build.compute_key(inputs)
    return os.path.join(os.path.realpath(paths.sub("images")), f"debian-{inputs['suite']}-{key}"), key


def ensure_base(suite="bookworm", packages=BASE_PACKAGES):
    """Path of a cached debootstrap'ed root file system of suite, for `Bootstrap: localimage`.

    Made once (as root) into images/debian-<suite>-<key>/rootfs, the key covering the
    suite, the archive and the packages; its manifest (every file, written last) is
    checked on each use, so an interrupted or damaged tree is removed and made again.
    """
    archive = sources.debian_archive_uri()
    if not archive:
        raise StepError("Debian base: no Debian archive found in this machine's apt sources")
    inputs = base_inputs(suite, archive, packages)
    entry, key = base_entry(inputs)
    label = f"Debian {suite} base"
    with paths.locked("apptainer-base"):
        reason = build.verify(entry, key, BASE_REQUIRED)
        if reason is None:
            info(f"{label}: cached ({entry})")
            return os.path.join(entry, "rootfs")
        if os.path.exists(entry):
            info(f"{label}: cached tree is unusable ({reason}); removing and making it again")
            shutil.rmtree(entry)
        if os.geteuid() != 0:
            raise StepError(f"{label}: debootstrap needs root; run this once as root (it is then cached in {entry})")
        ensure_packages()
        _debootstrap(label, inputs, entry, key)
        reason = build.verify(entry, key, BASE_REQUIRED)
        if reason is not None:
            raise StepError(f"{label}: the fresh tree in {entry} is incomplete: {reason}")
        return os.path.join(entry, "rootfs")


def _debootstrap(label, inputs, entry, key):
    name = os.path.basename(entry)
    log = paths.log_file(f"{name}.log")
    if os.path.exists(log):
        os.remove(log)
    part = entry + ".part"
    if os.path.exists(part):
        shutil.rmtree(part)
    rootfs = os.path.join(part, "rootfs")
    os.makedirs(rootfs)
    debs = paths.sub("sources", f"debootstrap-{inputs['suite']}")  # kept .debs: a remake fetches only indexes
    # every package checked against the archive's signed indexes (the suite moves with its
    # point releases, so its signing keys are the pin); no keyring is an error, not a skip
    cmd = ["debootstrap", "--variant=minbase", "--force-check-gpg", f"--keyring={sources.DEBIAN_KEYRING}"]
    cmd.append(f"--cache-dir={debs}")
    if inputs["packages"]:
        cmd.append("--include=" + ",".join(inputs["packages"]))
    cmd += [inputs["suite"], rootfs, inputs["archive"]]
    info(f"{label}: debootstrap from {inputs['archive']} (log: {log})")
    t0 = time.monotonic()
    run_logged(cmd, log, f"{label}: debootstrap")
    special = remove_special_files(rootfs)
    emptied = sum(len(empty_directory(rootfs, rel)) for rel in inputs["emptied"])
    with open(log, "a") as f:
        f.write(f"\nremoved device nodes and other special files: {' '.join(special)}\n")
        f.write(f"removed {emptied} files of {' and '.join(inputs['emptied'])}\n")
    build.write_manifest(part, key, name, inputs, time.monotonic() - t0)
    os.replace(part, entry)
    info(f"{label}: made in {fmt_seconds(time.monotonic() - t0)} ({entry})")


def remove_special_files(root):
    """Remove device nodes, FIFOs and sockets below root (Apptainer builds refuse/skip them)."""
    removed = []
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            full = os.path.join(dirpath, name)
            mode = os.lstat(full).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):
                os.remove(full)
                removed.append(os.path.relpath(full, root))
    return removed


def empty_directory(root, rel):
    """Remove the files of root/rel (not its subdirectories, e.g. apt's partial/)."""
    removed = []
    directory = os.path.join(root, rel)
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else ():
        full = os.path.join(directory, name)
        if not os.path.isdir(full) or os.path.islink(full):
            os.remove(full)
            removed.append(os.path.join(rel, name))
    return removed
