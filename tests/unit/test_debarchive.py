# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Debian source packages through the archive's signed index (lib/h5stack/stacks/debarchive.py),
on an archive of the test's own (file: URIs) signed by a key of its own: the newest
revision of the upstream version is taken, whatever revision was current when the pin
was written, and every link of the chain (signature, index, .orig, pin) is checked."""

import hashlib
import lzma
import os
import shutil
import subprocess
import tempfile

import pytest

from h5stack.base.ui import StepError
from h5stack.stacks import debarchive, sources

ORIG = "hdf5_2.2.0+repack.orig.tar.gz"
POOL = "pool/main/h/hdf5"


def gpg(home, *args):
    subprocess.run(["gpg", "--homedir", home, "--batch", "--quiet", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def keys():
    """{name: (gnupg home, keyring file)} of two signing keys: the archive's and another."""
    made = {}
    for name in ("archive", "other"):
        home = tempfile.mkdtemp(prefix="h5gpg")  # short: gpg-agent's socket path has a limit
        gpg(home, "--passphrase", "", "--quick-gen-key", f"h5stack test {name} <{name}@invalid>", "ed25519", "sign")
        gpg(home, "--output", os.path.join(home, "keyring.gpg"), "--export")
        made[name] = (home, os.path.join(home, "keyring.gpg"))
    yield made
    for home, _ in made.values():
        subprocess.run(["gpgconf", "--homedir", home, "--kill", "all"], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def stanza(version, orig_sha, orig_size):
    return (
        f"Package: hdf5\nBinary: libhdf5-dev,\n hdf5-tools\nVersion: {version}\nDirectory: {POOL}\n"
        f"Checksums-Sha256:\n 00 1 hdf5_{version}.dsc\n {orig_sha} {orig_size} {ORIG}\n\n"
    )


def publish(root, keys, versions, orig=b"the 2.2.0 release\n", signer="archive"):
    """An archive in root: sid's Sources listing versions (each with the same .orig),
    its Release signed by signer, the .orig in the pool. Returns (uri, orig's sha256)."""
    sha = hashlib.sha256(orig).hexdigest()
    dist = root / "dists" / "sid"
    (dist / "main" / "source").mkdir(parents=True, exist_ok=True)
    (root / POOL).mkdir(parents=True, exist_ok=True)
    (root / POOL / ORIG).write_bytes(orig)
    text = "Package: other\nVersion: 1-1\n\n" + "".join(stanza(v, sha, len(orig)) for v in versions)
    index = lzma.compress(text.encode())
    (dist / "main" / "source" / "Sources.xz").write_bytes(index)
    release = f"Suite: unstable\nSHA256:\n {hashlib.sha256(index).hexdigest()} {len(index)} main/source/Sources.xz\n"
    (dist / "Release").write_text(release)
    if (dist / "InRelease").exists():
        (dist / "InRelease").unlink()
    gpg(keys[signer][0], "--output", str(dist / "InRelease"), "--clearsign", str(dist / "Release"))
    return f"file://{root}", sha


def test_the_newest_revision_of_the_upstream_version_is_fetched(tmp_path, keys):
    """Revision -6 was current when the pin was written; the archive now lists -5 and -7
    (and another upstream version): -7's .orig is fetched, as the pin says."""
    uri, sha = publish(tmp_path / "archive", keys, ["2.2.0+repack-5", "2.2.0+repack-7", "2.3.0+repack-1"])
    dest = str(tmp_path / "orig")
    version = debarchive.fetch_orig(uri, "sid", "hdf5", "2.2.0+repack", sha, dest, keys["archive"][1])
    assert version == "2.2.0+repack-7"
    assert sources.sha256_of(dest) == sha


def test_a_release_signed_by_another_key_is_refused(tmp_path, keys):
    uri, sha = publish(tmp_path / "archive", keys, ["2.2.0+repack-7"], signer="other")
    with pytest.raises(StepError, match="InRelease: no good signature by"):
        debarchive.fetch_orig(uri, "sid", "hdf5", "2.2.0+repack", sha, str(tmp_path / "orig"), keys["archive"][1])
    assert not (tmp_path / "orig").exists()


def test_a_sources_index_other_than_the_signed_one_is_refused(tmp_path, keys):
    uri, sha = publish(tmp_path / "archive", keys, ["2.2.0+repack-7"])
    index = tmp_path / "archive" / "dists" / "sid" / "main" / "source" / "Sources.xz"
    index.write_bytes(lzma.compress(lzma.decompress(index.read_bytes()).replace(b"-7", b"-8")))
    with pytest.raises(StepError, match="Sources.xz: sha256 .* differs from the expected"):
        debarchive.fetch_orig(uri, "sid", "hdf5", "2.2.0+repack", sha, str(tmp_path / "orig"), keys["archive"][1])


def test_an_orig_other_than_the_index_says_is_refused(tmp_path, keys):
    uri, sha = publish(tmp_path / "archive", keys, ["2.2.0+repack-7"])
    (tmp_path / "archive" / POOL / ORIG).write_bytes(b"the 2.2.0 releasE\n")
    with pytest.raises(StepError, match=f"orig.tar.gz: sha256 .* differs from the expected {sha}"):
        debarchive.fetch_orig(uri, "sid", "hdf5", "2.2.0+repack", sha, str(tmp_path / "orig"), keys["archive"][1])
    assert not (tmp_path / "orig").exists()


def test_an_index_whose_orig_is_not_the_pinned_one_is_refused(tmp_path, keys):
    """A new upload of the same upstream version with another .orig: not the pinned source."""
    uri, _ = publish(tmp_path / "archive", keys, ["2.2.0+repack-7"], orig=b"a repacked repack\n")
    with pytest.raises(StepError, match=r"hdf5 2.2.0\+repack-7 \(sid\): the index gives .* not the pinned one"):
        debarchive.fetch_orig(uri, "sid", "hdf5", "2.2.0+repack", "f" * 64, str(tmp_path / "orig"), keys["archive"][1])


def test_a_listed_orig_the_archive_does_not_serve_names_the_revision(tmp_path, keys):
    uri, sha = publish(tmp_path / "archive", keys, ["2.2.0+repack-7"])
    (tmp_path / "archive" / POOL / ORIG).unlink()
    with pytest.raises(StepError, match=r"sid lists hdf5 2.2.0\+repack-7, but .*: not reachable"):
        debarchive.fetch_orig(uri, "sid", "hdf5", "2.2.0+repack", sha, str(tmp_path / "orig"), keys["archive"][1])


def test_no_revision_of_the_upstream_version_says_what_is_listed(tmp_path, keys):
    uri, sha = publish(tmp_path / "archive", keys, ["2.3.0+repack-1"])
    with pytest.raises(StepError, match=r"sid lists no revision of hdf5 2.2.0\+repack \(it lists: 2.3.0\+repack-1\)"):
        debarchive.fetch_orig(uri, "sid", "hdf5", "2.2.0+repack", sha, str(tmp_path / "orig"), keys["archive"][1])


def test_stacks_yaml_debian_entries_follow_the_archive(tmp_path, keys, monkeypatch):
    """An entry of stacks.yaml's form (upstream version, suite, pin of the .orig) is fetched
    from the machine's archive whatever revision it lists, cached under a name without the
    revision, and the cached copy serves after the archive moved on."""
    monkeypatch.setenv("H5STACK_HOME", str(tmp_path / "home"))
    uri, sha = publish(tmp_path / "archive", keys, ["2.2.0+repack-7"])
    monkeypatch.setattr(sources, "debian_archive_uri", lambda: uri)
    monkeypatch.setattr(sources, "DEBIAN_KEYRING", keys["archive"][1])
    entry = {"kind": "debian", "package": "hdf5", "upstream_version": "2.2.0+repack", "suite": "sid", "sha256": sha}
    src = sources.obtain("2", [entry])
    assert (src.sha256, src.origin) == (sha, "Debian source package hdf5 2.2.0+repack (sid)")
    assert os.path.basename(src.archive) == "hdf5_2.2.0+repack.orig.tar"
    publish(tmp_path / "archive", keys, ["2.2.0+repack-8"])
    (tmp_path / "archive" / POOL / ORIG).unlink()  # the cache needs no archive
    assert sources.obtain("2", [entry]).sha256 == sha


# -- binary packages: a Packages index and what a package needs to run ---------------------
PACKAGES = """\
Package: hdf5-tools
Source: hdf5
Version: 2.2.0+repack-6
Depends: libc6 (>= 2.38), libhdf5-320 (>= 1.14.3),
 libhdf5-hl-320 (>= 1.8.13)
Filename: pool/main/h/hdf5/hdf5-tools_2.2.0+repack-6_amd64.deb
Size: 359684
SHA256: 3641de62a3098440ec0ac8d18e91e2387b4d6c0c14cf0d8726451b99198dc79e
Description: HDF5 - Runtime tools
 These are utilities for manipulating HDF5 files.

Package: libhdf5-320
Source: hdf5
Version: 2.2.0+repack-6
Depends: libc6 (>= 2.38), libsz2 (>= 1.1.7) | libaec0, zlib1g (>= 1:1.2.0)

Package: libhdf5-320
Source: hdf5
Version: 2.2.0+repack-7

Package: libhdf5-hl-320
Source: hdf5 (2.2.0+repack-6)
Version: 2.2.0+repack-6+b1
Pre-Depends: libhdf5-320 (>= 2.1.0)

Package: libc6
Source: glibc
Version: 2.43-7
Depends: libgcc-s1, debconf (>= 0.5) | debconf-2.0

Package: libgcc-s1
Source: gcc-16
Version: 16.2.0-4
Depends: libc6:any (>= 2.35)

Package: zlib1g
Source: zlib
Version: 1:1.3.dfsg+really1.3.2-4

Package: libsz2
Source: libaec
Version: 1.1.7-1

Package: cdebconf
Version: 0.280
Provides: debconf-2.0

Package: debconf-alike
Version: 1.0
Provides: debconf-2.0
"""


def index(text=PACKAGES):
    return debarchive.by_name(debarchive.paragraphs(text.splitlines(True), debarchive.PACKAGE_FIELDS))


def test_a_packages_index_keeps_the_fields_closure_reads():
    tools = index()["hdf5-tools"][0]
    assert "Description" not in tools and tools["Size"] == "359684"
    assert tools["Depends"] == "libc6 (>= 2.38), libhdf5-320 (>= 1.14.3),\nlibhdf5-hl-320 (>= 1.8.13)"


def test_relations_read_alternatives_constraints_and_qualifiers():
    assert debarchive.relations("libc6:any (>= 2.35),\ndebconf | debconf-2.0 (<< 2:1.0~rc1), zlib1g") == [
        [("libc6", ">=", "2.35")],
        [("debconf", None, None), ("debconf-2.0", "<<", "2:1.0~rc1")],
        [("zlib1g", None, None)],
    ]
    with pytest.raises(StepError, match="cannot read the dependency 'libc6 >= 2'"):
        debarchive.relations("libc6 >= 2")


def test_the_closure_of_a_pinned_package_takes_what_it_needs_to_run():
    """Depends and Pre-Depends, recursively, the pinned package first: the first alternative
    the index has (libsz2, not libaec0), a virtual package from the first package by name
    that provides it (cdebconf, not debconf-alike), a binNMU of the pinned source (libhdf5-hl-320 +b1), and
    libhdf5-320 of the pinned source version although -7 is newer."""
    found = debarchive.closure(index(), "hdf5-tools", "2.2.0+repack-6", "sid")
    assert [(s["Package"], s["Version"]) for s in found] == [
        ("hdf5-tools", "2.2.0+repack-6"),
        ("libc6", "2.43-7"),
        ("libhdf5-320", "2.2.0+repack-6"),
        ("libhdf5-hl-320", "2.2.0+repack-6+b1"),
        ("libgcc-s1", "16.2.0-4"),
        ("cdebconf", "0.280"),
        ("libsz2", "1.1.7-1"),
        ("zlib1g", "1:1.3.dfsg+really1.3.2-4"),
    ]
    assert debarchive.source_of(found[3]) == ("hdf5", "2.2.0+repack-6")
    assert debarchive.source_of(found[1]) == ("glibc", "2.43-7")


def test_a_pinned_version_the_index_no_longer_lists_names_what_it_lists():
    with pytest.raises(StepError, match=r"sid does not list hdf5-tools 2.2.0\+repack-5 \(it lists: 2.2.0\+repack-6\)"):
        debarchive.closure(index(), "hdf5-tools", "2.2.0+repack-5", "sid")


def test_a_dependency_no_version_satisfies_is_refused():
    text = PACKAGES.replace("Depends: libc6 (>= 2.38), libhdf5-320", "Depends: libc6 (>= 2.44), libhdf5-320", 1)
    with pytest.raises(
        StepError, match=r"sid: hdf5-tools 2.2.0\+repack-6 needs libc6 \(>= 2.44\), .*\(it lists libc6 2.43-7\)"
    ):
        debarchive.closure(index(text), "hdf5-tools", "2.2.0+repack-6", "sid")


def test_a_library_of_the_pinned_source_from_another_upload_is_refused():
    """Only libhdf5-320 2.2.0+repack-7 is listed: not the pinned source version, refused."""
    text = PACKAGES.replace(
        "Version: 2.2.0+repack-6\nDepends: libc6 (>= 2.38), libsz2", "Version: 2.2.0+repack-5\nDepends: libsz2"
    )
    with pytest.raises(
        StepError,
        match=r"needs libhdf5-320 \(>= 1.14.3\).*it lists libhdf5-320 2.2.0\+repack-5, libhdf5-320 2.2.0\+repack-7",
    ):
        debarchive.closure(index(text), "hdf5-tools", "2.2.0+repack-6", "sid")


def test_a_dependency_already_chosen_in_another_version_is_refused():
    """libgcc-s1 asks for a libc6 newer than the one chosen for hdf5-tools."""
    text = PACKAGES.replace("libc6:any (>= 2.35)", "libc6:any (>= 2.44)")
    with pytest.raises(StepError, match=r"libgcc-s1 16.2.0-4 needs libc6 \(>= 2.44\)"):
        debarchive.closure(index(text), "hdf5-tools", "2.2.0+repack-6", "sid")


def test_skipped_dependencies_are_not_followed():
    """A dependency is skipped when all its alternatives are named: libgcc-s1, and debconf
    only with debconf-2.0 (else cdebconf provides it)."""
    found = debarchive.closure(index(), "hdf5-tools", "2.2.0+repack-6", "sid", skip=("libgcc-s1", "debconf"))
    assert "libgcc-s1" not in [s["Package"] for s in found] and "cdebconf" in [s["Package"] for s in found]
    found = debarchive.closure(index(), "hdf5-tools", "2.2.0+repack-6", "sid", skip=("debconf", "debconf-2.0"))
    assert [s["Package"] for s in found] == [
        "hdf5-tools", "libc6", "libhdf5-320", "libhdf5-hl-320", "libgcc-s1", "libsz2", "zlib1g",
    ]  # fmt: skip
