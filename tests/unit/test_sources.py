# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Obtaining HDF5 sources: order, checksums, the machine's own Debian archive."""

import os
import subprocess

import pytest

from h5stack.base.ui import StepError
from h5stack.stacks import sources


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("H5STACK_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def make_tarball(tmp_path, version=(1, 14, 9)):
    top = tmp_path / "hdf5-fake"
    (top / "src").mkdir(parents=True)
    (top / "CMakeLists.txt").write_text("project(fake C)\n")
    (top / "src" / "H5public.h").write_text(
        "".join(f"#define H5_VERS_{k} {v}\n" for k, v in zip(("MAJOR", "MINOR", "RELEASE"), version))
    )
    tarball = tmp_path / "hdf5-fake.tar.gz"
    subprocess.run(["tar", "czf", str(tarball), "-C", str(tmp_path), "hdf5-fake"], check=True)
    return tarball


def test_user_tarball_comes_first(home, tmp_path):
    tarball = make_tarball(tmp_path)
    entries = [{"kind": "url", "url": "http://127.0.0.1:9/never-used.tar.gz", "sha256": "0" * 64}]
    src = sources.obtain("1.14", entries, tarball=str(tarball))
    assert src.origin == f"user tarball {tarball}"
    assert src.sha256 == sources.sha256_of(tarball)
    root = src.unpack(str(tmp_path / "unpacked"))
    assert sources.hdf5_version_of(root) == "1.14.9"


def test_missing_user_tarball_is_a_clear_error(home):
    with pytest.raises(StepError, match="--tarball 1.14=/no/such.tar.gz: no such file"):
        sources.obtain("1.14", [], tarball="/no/such.tar.gz")


def test_cached_source_with_wrong_checksum_is_not_used(home, tmp_path):
    tarball = make_tarball(tmp_path)
    store = home / "sources"
    store.mkdir(parents=True)
    (store / "fake.tar.gz").write_bytes(tarball.read_bytes())
    good = {"kind": "url", "url": "http://127.0.0.1:9/fake.tar.gz", "sha256": sources.sha256_of(tarball)}
    assert sources.obtain("1.14", [good]).sha256 == good["sha256"]
    bad = dict(good, sha256="f" * 64)
    with pytest.raises(StepError) as err:
        sources.obtain("1.14", [bad])
    assert not (store / "fake.tar.gz").exists(), "a corrupt cached source is removed"
    assert "no source for HDF5 1.14 could be obtained" in str(err.value)
    assert "--tarball 1.14=PATH" in str(err.value)


def test_a_source_without_a_pin_is_refused(home, tmp_path):
    """An entry with no sha256 is used neither from the cache nor fetched."""
    tarball = make_tarball(tmp_path)
    store = home / "sources"
    store.mkdir(parents=True)
    (store / "fake.tar.gz").write_bytes(tarball.read_bytes())
    for sha in (None, "", "abc"):
        entry = {"kind": "url", "url": "http://127.0.0.1:9/fake.tar.gz"} | ({"sha256": sha} if sha is not None else {})
        with pytest.raises(StepError, match="pins no sha256 \\(64 hex digits\\): not used; every source is pinned"):
            sources.obtain("1.14", [entry])
        with pytest.raises(StepError, match="pins no sha256"):
            sources.fetch_cached(entry, "test")


def test_every_pinned_entry_of_stacks_yaml_has_its_sha256():
    """stacks.yaml and the sources beside the code (Apptainer's) are all pinned."""
    from h5stack.machine import apptainer
    from h5stack.stacks.plan import load_config

    entries = [e for series in load_config()["hdf5"].values() for e in series["sources"]]
    entries.append(apptainer.APPTAINER_SOURCE)
    for entry in entries:
        assert len(sources.pinned(entry)) == 64, entry


def test_a_tampered_cached_debian_source_is_removed(home, tmp_path):
    """The cached .orig of a Debian source package that differs from its pin (the HDF5
    2.x entry had none) is removed and not used."""
    from h5stack.stacks.plan import load_config

    (entry,) = [e for e in load_config()["hdf5"]["2"]["sources"] if e["kind"] == "debian"]
    store = home / "sources"
    store.mkdir(parents=True)
    cached = store / sources._cache_name(entry)
    cached.write_bytes(make_tarball(tmp_path).read_bytes())
    entry = dict(entry, package="hdf5", suite="no-such-suite-here")  # fetching it again fails fast
    with pytest.raises(StepError, match="no source for HDF5 2 could be obtained"):
        sources.obtain("2", [entry])
    assert not cached.exists(), "the tampered copy is removed"


def test_unreachable_url_falls_through_with_reasons(home):
    entries = [{"kind": "url", "url": "http://127.0.0.1:9/hdf5.tar.gz", "sha256": "0" * 64}]
    with pytest.raises(StepError, match=r"official tarball http://127.0.0.1:9/hdf5.tar.gz: not reachable"):
        sources.obtain("1.14", entries)


def test_debian_archive_comes_from_this_machines_apt_sources():
    uri = sources.debian_archive_uri()
    assert uri, "no Debian archive in this machine's apt sources"
    listed = ""
    for path in ["/etc/apt/sources.list"] + [
        os.path.join("/etc/apt/sources.list.d", f) for f in os.listdir("/etc/apt/sources.list.d")
    ]:
        if os.path.isfile(path):
            listed += open(path).read()
    assert uri in listed


def test_unpack_rejects_a_tree_without_cmake(home, tmp_path):
    top = tmp_path / "not-hdf5"
    top.mkdir()
    (top / "README").write_text("nothing\n")
    tarball = tmp_path / "not-hdf5.tar.gz"
    subprocess.run(["tar", "czf", str(tarball), "-C", str(tmp_path), "not-hdf5"], check=True)
    src = sources.Source(str(tarball), sources.sha256_of(tarball), "test")
    with pytest.raises(StepError, match="no CMakeLists.txt"):
        src.unpack(str(tmp_path / "out"))
