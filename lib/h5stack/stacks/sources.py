# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Obtaining HDF5's real source code, in the order stacks.yaml gives.

Kinds of source (each entry of `hdf5.<series>.sources`):
  url     the official release tarball, checked against its sha256
  debian  the .orig tarball of Debian's source package (debarchive.py): from the archive
          this machine's own apt sources name, the suite's newest revision of the entry's
          upstream version, checked through the suite's signed index (gpgv, Debian's
          archive keyring)
  crate   a Rust crate that vendors the sources, fetched by `cargo vendor`
Every entry pins the sha256 of its file: checked when it is fetched and whenever a
cached copy is used (a copy that differs is removed and the next entry tried); an entry
without a pin is refused. A tarball the user names (`--tarball SERIES=PATH`) is their
own choice and is tried first. A source already
in $H5STACK_HOME/sources is used before anything is fetched, so a warm setup needs
no network. The result is an unpacked source tree and the sha256 of what it came
from (part of the build's cache key).
"""

import functools
import glob
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import threading
import urllib.request

from h5stack.base import paths
from h5stack.base.ui import StepError, info
from h5stack.stacks import debarchive


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def unpack_archive(archive, dest):
    """Unpack a tar archive (any compression) into dest; returns its top-level directories.
    Members that would land outside dest, or special files, are refused where Python's
    extraction filters exist (3.11.4 on)."""
    os.makedirs(dest, exist_ok=True)
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(dest, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    except (tarfile.TarError, OSError) as e:
        raise StepError(f"{archive}: cannot unpack: {e}") from e
    return sorted(d for d in os.listdir(dest) if os.path.isdir(os.path.join(dest, d)))


def read_member(archive, relpath):
    """The bytes of relpath inside the archive's top directory (read in one pass), or None
    when the archive has no such member."""
    try:
        with tarfile.open(archive) as tar:
            first = tar.next()
            f = first and tar.extractfile(f"{first.name.split('/')[0]}/{relpath}")
            return f.read() if f else None
    except KeyError:
        return None
    except (tarfile.TarError, OSError) as e:
        raise StepError(f"{archive}: cannot read: {e}") from e


class Source:
    """An obtained source: archive (or directory), its checksum, where it came from."""

    def __init__(self, archive, sha256, origin, subdir=None):
        self.archive = archive
        self.sha256 = sha256
        self.origin = origin
        self.subdir = subdir

    @functools.cached_property
    def has_tools(self):
        """The tree carries HDF5's tools (tools/CMakeLists.txt): a release and Debian's
        source package do, the 2.x crate does not."""
        return read_member(self.archive, f"{self.subdir + '/' if self.subdir else ''}tools/CMakeLists.txt") is not None

    def unpack(self, dest):
        """Unpack into dest and return the directory holding the top CMakeLists.txt."""
        tops = unpack_archive(self.archive, dest)
        if len(tops) != 1:
            raise StepError(f"{self.archive}: expected one top-level directory, found {tops}")
        root = os.path.join(dest, tops[0], self.subdir or "")
        if not os.path.exists(os.path.join(root, "CMakeLists.txt")):
            raise StepError(f"{self.archive}: no CMakeLists.txt in {self.subdir or 'its top directory'}")
        return root

    def unpack_patched(self, patches, work):
        """Unpack into work/src and apply patches (paths) with `patch -p1`; the root."""
        root = self.unpack(os.path.join(work, "src"))
        for patch in patches:
            with open(patch) as f:
                proc = subprocess.run(["patch", "-p1"], cwd=root, stdin=f, capture_output=True, text=True)
            if proc.returncode != 0:
                where = os.path.relpath(patch, paths.ROOT)
                raise StepError(f"patch {where} does not apply:\n{proc.stdout}{proc.stderr}")
        return root

    @functools.cached_property
    def hdf5_version(self):
        """The HDF5 version of the source's H5public.h, read from the archive."""
        sub = f"{self.subdir + '/' if self.subdir else ''}src/H5public.h"
        text = read_member(self.archive, sub)
        if text is None:
            raise StepError(f"{self.archive}: no {sub}")
        return hdf5_version_in(text.decode(errors="replace"), f"{self.archive}: {sub}")


def hdf5_version_in(text, where):
    """The version that H5public.h's text (from `where`) defines, e.g. '1.14.6' or '2.2.0'."""
    nums = [re.search(rf"#define\s+H5_VERS_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "RELEASE")]
    if not all(nums):
        raise StepError(f"{where}: no H5_VERS_MAJOR/MINOR/RELEASE")
    return ".".join(m.group(1) for m in nums)


def hdf5_version_of(src_dir):
    """The version in src_dir/src/H5public.h."""
    path = os.path.join(src_dir, "src", "H5public.h")
    return hdf5_version_in(open(path).read(), path)


def _cache_name(entry):
    kind = entry["kind"]
    if kind == "url":
        return os.path.basename(entry["url"])
    if kind == "debian":  # one file for every Debian revision of the upstream version
        return f"{entry['package']}_{entry['upstream_version']}.orig.tar"
    if kind == "crate":
        return f"{entry['crate']}-{entry['version']}.crate"
    raise StepError(f"stacks.yaml: unknown source kind {kind!r}")


def _describe(entry):
    kind = entry["kind"]
    if kind == "url":
        return f"official tarball {entry['url']}"
    if kind == "debian":
        return f"Debian source package {entry['package']} {entry['upstream_version']} ({entry['suite']})"
    return f"Rust crate {entry['crate']} {entry['version']}"


def pinned(entry):
    """entry's sha256: every source is pinned (stacks.yaml, or beside the code that uses it)."""
    sha = entry.get("sha256")
    if not (isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha)):
        raise StepError(f"the {_describe(entry)} pins no sha256 (64 hex digits): not used; every source is pinned")
    return sha


def _check_sha(path, expected, what):
    actual = sha256_of(path)
    if actual != expected:
        raise StepError(f"{what}: sha256 {actual} of {path} differs from the expected {expected}")
    return actual


def _fetch_url(entry, dest):
    tmp = dest + ".part"
    try:
        with urllib.request.urlopen(entry["url"], timeout=20) as resp, open(tmp, "wb") as out:
            shutil.copyfileobj(resp, out)
    except OSError as err:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise StepError(f"not reachable ({err})") from None
    _check_sha(tmp, pinned(entry), entry["url"])
    os.replace(tmp, dest)


#: Debian's archive signing keys: the signed indexes that pin every file fetched from the
#: archive (source packages here, the packages of the images' base in machine/apptainer.py)
DEBIAN_KEYRING = debarchive.DEBIAN_KEYRING


def debian_archive_uri():
    """The Debian archive this machine's apt uses (from its own sources), or None."""
    candidates = []
    for path in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*"))]:
        if not os.path.isfile(path):
            continue
        text = open(path, errors="replace").read()
        if path.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
                suites = re.search(r"^Suites:\s*(.+)$", stanza, re.M)
                if uris and suites and "security" not in suites.group(1):
                    candidates.append(uris.group(1))
        elif path.endswith(".list"):
            for line in text.splitlines():
                m = re.match(r"\s*deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
                if m and "security" not in m.group(2):
                    candidates.append(m.group(1))
    debian = [u for u in candidates if "debian" in u and "security" not in u]
    return (debian or candidates or [None])[0]


def _fetch_debian(entry, dest):
    uri = debian_archive_uri()
    if not uri:
        raise StepError("no Debian archive found in this machine's apt sources")
    where = (uri.rstrip("/"), entry["suite"], entry["package"], entry["upstream_version"])
    version = debarchive.fetch_orig(*where, pinned(entry), dest, DEBIAN_KEYRING)
    info(f"{entry['package']} {version} is {entry['suite']}'s current revision; its .orig matches the pin")


def _fetch_crate(entry, dest):
    if not shutil.which("cargo"):
        raise StepError("cargo is not installed")
    log = paths.log_file("sources.log")
    with tempfile.TemporaryDirectory(dir=paths.sub("sources")) as work:
        with open(os.path.join(work, "Cargo.toml"), "w") as f:
            f.write(
                '[package]\nname = "h5stack-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n'
                f'[dependencies]\n{entry["crate"]} = "={entry["version"]}"\n'
            )
        os.makedirs(os.path.join(work, "src"))
        open(os.path.join(work, "src", "lib.rs"), "w").close()
        env = dict(os.environ, CARGO_HOME=os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo")))
        with open(log, "a") as out:
            out.write(f"\n$ cargo vendor ({entry['crate']} {entry['version']})\n")
            out.flush()
            proc = subprocess.run(
                ["cargo", "vendor", "--versioned-dirs", "vendor"],
                cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        # An old cargo (Debian 12's is 0.66) downloads the crate but then fails to parse
        # its manifest (edition 2024): the downloaded .crate is still good when its
        # sha256 is the pinned one.
        crate_files = glob.glob(
            os.path.join(env["CARGO_HOME"], "registry", "cache", "*", f"{entry['crate']}-{entry['version']}.crate")
        )
        if not crate_files:
            why = f"`cargo vendor` failed (exit {proc.returncode})" if proc.returncode else "cargo fetched nothing"
            version = subprocess.run(["cargo", "--version"], capture_output=True, text=True).stdout.strip()
            m = re.match(r"cargo (\d+)\.(\d+)", version)
            if m and (int(m.group(1)), int(m.group(2))) < (1, 68):
                why += f"; {version} predates the registry's sparse index (cargo >= 1.68, e.g. from rustup)"
            raise StepError(f"{why}; no {entry['crate']}-{entry['version']}.crate (see {log})")
        sha = _check_sha(crate_files[0], pinned(entry), _describe(entry))
        shutil.copyfile(crate_files[0], dest + ".part")
        os.replace(dest + ".part", dest)
        return sha


def fetch(entry, dest):
    """Fetch one source entry (kind url, debian or crate) into dest, checked against its pin."""
    pinned(entry)
    {"url": _fetch_url, "debian": _fetch_debian}.get(entry["kind"], _fetch_crate)(entry, dest)


_FETCHING = threading.Lock()


def fetch_cached(entry, label):
    """The path of entry's file in $H5STACK_HOME/sources: the cached one when its
    sha256 is the pinned one, else fetched; label names what it is for in messages."""
    path = os.path.join(paths.sub("sources"), _cache_name(entry))
    with _FETCHING:  # the set-up's threads (plan.in_dependency_order) fetch one file once
        if os.path.exists(path):
            if sha256_of(path) == pinned(entry):
                return path
            info(f"removing {path}: checksum mismatch")
            os.remove(path)
        info(f"{label}: fetching the {_describe(entry)}")
        try:
            fetch(entry, path)
        except StepError as err:
            raise StepError(f"{label}: {_describe(entry)}: {err}") from None
        return path


def obtain(series, entries, tarball=None):
    """Return a Source for an HDF5 series, trying a user tarball, the cache, then each entry."""
    if tarball:
        if not os.path.isfile(tarball):
            raise StepError(f"--tarball {series}={tarball}: no such file")
        return Source(os.path.abspath(tarball), sha256_of(tarball), f"user tarball {tarball}")
    store = paths.sub("sources")
    for entry in entries:  # a cached source needs no network
        path = os.path.join(store, _cache_name(entry))
        if os.path.exists(path):
            sha = sha256_of(path)
            if sha != pinned(entry):
                info(f"removing {path}: checksum mismatch")
                os.remove(path)
                continue
            return Source(path, sha, _describe(entry), entry.get("subdir"))
    failures = []
    for entry in entries:
        path = os.path.join(store, _cache_name(entry))
        info(f"HDF5 {series}: fetching the {_describe(entry)}")
        try:
            fetch(entry, path)
        except StepError as err:
            info(f"HDF5 {series}: {_describe(entry)}: {err}")
            failures.append(f"{_describe(entry)}: {err}")
            continue
        return Source(path, sha256_of(path), _describe(entry), entry.get("subdir"))
    raise StepError(
        f"no source for HDF5 {series} could be obtained:\n  "
        + "\n  ".join(failures)
        + f"\n  name a release tarball with `./h5stack setup --tarball {series}=PATH`"
    )
