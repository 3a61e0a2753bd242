# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Apptainer from Debian's binary package (lib/h5stack/machine/apptainer.py): the tree's
key and layout, and, on an archive of the test's own (test_debtools.py's: file: URIs, its
own signing key, this machine's loader and C library as libc6), a tree resolved without
the dependencies it does not take, patched to run with its own loader, remade from the
kept packages without the archive, and the source build where the archive no longer lists
the pinned package."""

import json
import os
import shutil
import subprocess

import pytest
from test_debarchive import gpg, keys  # noqa: F401  (keys: the archive's signing key, a fixture)
from test_debtools import compiled, deb, machine, publish  # noqa: F401  (machine: a fixture)

from h5stack.base.ui import StepError
from h5stack.machine import apptainer
from h5stack.stacks import build, debarchive, debtools

TRIPLET = "x86_64-linux-gnu"
LIBDIR = f"usr/lib/{TRIPLET}"
PROGRAM = r"""#include <stdio.h>
int main(void) { puts("apptainer version 1.4.5"); return 0; }
"""


def stanza(name, version, sha="0" * 64):
    return {"Package": name, "Version": version, "SHA256": sha}


PACKAGES = [stanza("apptainer", "1.4.5-2"), stanza("libc6", "2.43-7"), stanza("libseccomp2", "2.6.1-1+b2")]


def tree_key(packages):
    return build.compute_key(apptainer.tree_inputs(packages))


def test_the_key_covers_the_packages_and_the_recipe(monkeypatch):
    base = tree_key(PACKAGES)
    assert tree_key(list(reversed(PACKAGES))) == base  # a set of packages: order does not matter
    variants = [
        PACKAGES[:2],
        [stanza("apptainer", "1.4.5-3"), *PACKAGES[1:]],
        [stanza("apptainer", "1.4.5-2", "1" * 64), *PACKAGES[1:]],
        [*PACKAGES[:2], stanza("libsqlite3-0", "2.6.1-1+b2")],
    ]
    keys_ = {base} | {tree_key(v) for v in variants}
    monkeypatch.setattr(apptainer, "TREE_RECIPE_VERSION", apptainer.TREE_RECIPE_VERSION + 1)
    keys_.add(tree_key(PACKAGES))
    assert len(keys_) == 6


def debian_layout(root):
    """The files of Debian's apptainer and libc6 that the layout step moves or needs."""
    for rel in (
        "usr/bin/apptainer", f"{LIBDIR}/apptainer/bin/starter", f"{LIBDIR}/apptainer/lib/offsetpreload.so",
        f"{LIBDIR}/libc.so.6", f"{LIBDIR}/ld-linux-x86-64.so.2", "etc/apptainer/apptainer.conf",
    ):  # fmt: skip
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "var/lib/apptainer/mnt/session").mkdir(parents=True)


def test_the_layout_apptainer_finds_its_files_in(tmp_path):
    """The starter's directory under usr/libexec (a link where `apptainer` looks for it);
    usr/etc and usr/var: the tree's etc/ and var/."""
    debian_layout(tmp_path)
    assert apptainer.relocate(str(tmp_path)) == ([LIBDIR], f"{LIBDIR}/ld-linux-x86-64.so.2")
    starter = tmp_path / "usr/libexec/apptainer/bin/starter"
    assert starter.read_text() == f"{LIBDIR}/apptainer/bin/starter"
    assert os.readlink(tmp_path / LIBDIR / "apptainer") == "../../libexec/apptainer"
    assert (tmp_path / LIBDIR / "apptainer/bin/starter").resolve() == starter
    assert (tmp_path / "usr/etc/apptainer/apptainer.conf").is_file()
    assert (tmp_path / "usr/var/lib/apptainer/mnt/session").is_dir()
    with pytest.raises(StepError, match=f"no {LIBDIR}/apptainer: not the layout of Debian's apptainer package"):
        apptainer.relocate(str(tmp_path))  # done already


def test_the_programs_are_patched_with_the_final_paths():
    """Patched in the temporary directory, they name the tree's final place."""
    cmd = apptainer.patch_command("/opt/t.x1/usr/bin/apptainer", "/opt/t", [LIBDIR], f"{LIBDIR}/ld-linux-x86-64.so.2")
    assert cmd == [
        "patchelf", "--set-interpreter", f"/opt/t/{LIBDIR}/ld-linux-x86-64.so.2",
        "--force-rpath", "--set-rpath", f"/opt/t/{LIBDIR}", "/opt/t.x1/usr/bin/apptainer",
    ]  # fmt: skip


def archive(tmp_path, keys, version="1.4.5-2"):  # noqa: F811
    """apptainer (its programs: a small one that prints the version) depending on libc6
    (this machine's loader and C library) and on packages of NOT_TAKEN the index lacks."""
    libraries = compiled(tmp_path)[1]
    (tmp_path / "apptainer.c").write_text(PROGRAM)
    program = tmp_path / "apptainer"
    subprocess.run(["cc", "-O1", str(tmp_path / "apptainer.c"), "-o", str(program)], check=True)
    root = tmp_path / "archive"
    (root / "build" / "apptainer" / "var/lib/apptainer/mnt/session").mkdir(parents=True)
    conf = tmp_path / "apptainer.conf"
    conf.write_text("mount proc = yes\n")
    files = {
        "usr/bin/apptainer": program,
        f"{LIBDIR}/apptainer/bin/starter": program,
        "etc/apptainer/apptainer.conf": conf,
    }
    package = deb(root, "apptainer", version, files, "libc6")
    libc6 = deb(root, "libc6", "2.43-7", {f"{LIBDIR}/{soname}": path for soname, path in libraries.items()})
    depends = "ca-certificates, squashfs-tools, libc6 (>= 2.38)"
    stanzas = [
        (f"Package: apptainer\nVersion: {version}\nDepends: {depends}\n", package),
        ("Package: libc6\nSource: glibc\nVersion: 2.43-7\nDepends: libc-gconv-modules-extra (= 2.43-7)\n", libc6),
    ]
    return publish(root, keys, stanzas)


@pytest.fixture
def no_apptainer_on_path(monkeypatch):
    which = shutil.which
    monkeypatch.setattr(apptainer.shutil, "which", lambda name: None if name == "apptainer" else which(name))
    monkeypatch.setattr(apptainer, "ensure_packages", lambda: None)
    monkeypatch.setattr(apptainer, "built_apptainer", lambda: pytest.fail("built from source"))


@pytest.mark.skipif(not shutil.which("patchelf"), reason="no patchelf (requirements/debian-containers.txt)")
def test_a_tree_of_debians_package_runs_with_its_own_loader(tmp_path, keys, machine, no_apptainer_on_path):  # noqa: F811
    machine(archive(tmp_path, keys))
    assert apptainer.installed_apptainer() is None  # none yet: the site config offers no Apptainer
    exe = apptainer.ensure_apptainer()
    assert apptainer.installed_apptainer() == exe  # the one the site config's container platform runs
    prefix = exe[: -len("/usr/bin/apptainer")]
    assert os.path.basename(prefix).startswith("debian-apptainer-1.4.5-2-") and exe.endswith("/usr/bin/apptainer")
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True)
    assert proc.stdout == "apptainer version 1.4.5\n", proc.stderr
    for rel in apptainer.PATCHED:
        interpreter = subprocess.run(["patchelf", "--print-interpreter", os.path.join(prefix, rel)],
                                     capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        assert interpreter.startswith(os.path.join(prefix, LIBDIR, "ld-linux"))
    assert os.path.isdir(os.path.join(prefix, "usr/var/lib/apptainer/mnt/session"))
    record = json.load(open(apptainer.debian_packages().record))
    assert [p["Package"] for p in record["packages"]] == ["apptainer", "libc6"]  # the rest not taken
    assert record["skip"] == sorted(apptainer.NOT_TAKEN)

    # cached; then a damaged tree is made again from the kept packages, without the archive
    assert apptainer.ensure_apptainer() == exe
    shutil.rmtree(tmp_path / "archive")
    os.remove(os.path.join(prefix, "etc/apptainer/apptainer.conf"))
    assert apptainer.apptainer_status(prefix, build.compute_key(apptainer.tree_inputs(record["packages"])))
    assert apptainer.ensure_apptainer() == exe
    assert subprocess.run([exe, "--version"], capture_output=True).returncode == 0
    assert sorted(os.listdir(os.path.dirname(prefix))) == [os.path.basename(prefix)]  # no leftovers


def test_where_sid_no_longer_lists_the_package_it_is_built_from_source(tmp_path, keys, machine, monkeypatch):  # noqa: F811
    machine(archive(tmp_path, keys, version="1.4.5-3"))
    which = shutil.which
    monkeypatch.setattr(apptainer.shutil, "which", lambda name: None if name == "apptainer" else which(name))
    monkeypatch.setattr(apptainer, "built_apptainer", lambda: "/opt/built/bin/apptainer")
    with pytest.raises(debarchive.Unresolvable, match=r"sid does not list apptainer 1.4.5-2 \(it lists: 1.4.5-3\)"):
        apptainer.debian_apptainer()
    assert apptainer.ensure_apptainer() == "/opt/built/bin/apptainer"


def test_packages_resolved_with_other_skipped_dependencies_are_not_taken_as_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("H5STACK_HOME", str(tmp_path / "home"))
    pin = apptainer.APPTAINER_PACKAGE
    taken = debtools.DebianPackages(pin, "here", skip=["uidmap"])
    with open(taken.record, "w") as f:
        json.dump({"suite": "sid", "arch": "amd64", "skip": ["uidmap"], "packages": PACKAGES}, f)
    assert taken.recorded() == PACKAGES
    assert debtools.DebianPackages(pin, "here").recorded() is None
    assert apptainer.debian_packages().recorded() is None
