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
