# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""HDF5's tools from Debian's binary packages (lib/h5stack/stacks/debtools.py), on an
archive of the test's own (file: URIs, signed by a key of its own) whose packages carry
this machine's own dynamic loader and C library and, as h5dump and h5diff, a small program
that prints its version and environment: the packages are resolved through the signed
index, recorded, unpacked into a keyed tree whose launchers run the programs with the
tree's loader; a warm set-up needs no archive, and a copy of the tree runs where it lies."""

import hashlib
import json
import lzma
import os
import shutil
import subprocess

import pytest
from test_debarchive import gpg, keys  # noqa: F401  (keys: the archive's signing key, a fixture)

from h5stack.base.ui import StepError
from h5stack.stacks import debtools, sources

PIN = {"package": "hdf5-tools", "version": "2.2.0+repack-6", "suite": "sid"}
WHERE = "stacks.yaml (hdf5.2.debian_tools)"
PROGRAM = r"""#include <stdio.h>
#include <stdlib.h>
#include <math.h>
int main(int argc, char **argv)
{
    const char *plugins = getenv("HDF5_PLUGIN_PATH"), *preload = getenv("LD_PRELOAD");
    printf("%s: Version 2.2.0\nplugins: %s\npreload: %s\n", argv[0], plugins ? plugins : "", preload ? preload : "");
    return argc > 1 && argv[1][0] == 'x' ? (int)sqrt(4.0) : 0;
}
"""


def compiled(tmp_path, libm=False):
    """The program, and {soname: path} of the libraries it loads (ldd), its loader among them."""
    (tmp_path / "prog.c").write_text(PROGRAM)
    out = tmp_path / "prog"
    flags = ["-Wl,--no-as-needed", "-lm"] if libm else []
    subprocess.run(["cc", "-O1", str(tmp_path / "prog.c"), "-o", str(out), *flags], check=True)
    libraries = {}
    for line in subprocess.run(["ldd", str(out)], capture_output=True, text=True, check=True).stdout.splitlines():
        words = line.split()
        if "=>" in words and words[2].startswith("/"):
            libraries[words[0]] = words[2]
        elif words and words[0].startswith("/"):
            libraries[os.path.basename(words[0])] = words[0]
    return str(out), libraries


def deb(root, name, version, files, depends=""):
    """A .deb made by dpkg-deb -b; files: {path in the package: file to copy there}."""
    tree = root / "build" / name
    (tree / "DEBIAN").mkdir(parents=True)
    control = (
        f"Package: {name}\nVersion: {version}\nArchitecture: {debtools.debian_architecture()}\n"
        f"Maintainer: h5stack test <test@invalid>\nDescription: a test package\n"
    )
    (tree / "DEBIAN" / "control").write_text(control + (f"Depends: {depends}\n" if depends else ""))
    for rel, src in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, tree / rel)
    path = root / "pool" / f"{name}_{version}.deb"
    path.parent.mkdir(exist_ok=True)
    subprocess.run(["dpkg-deb", "-Zgzip", "--root-owner-group", "-b", str(tree), str(path)], check=True,
                   capture_output=True)  # fmt: skip
    return path


def publish(root, keys, packages):  # noqa: F811
    """An archive in root: sid's Packages index of packages [(stanza text, .deb)], its
    Release signed by the archive's key. Its file: URI."""
    text = ""
    for stanza, path in packages:
        data = path.read_bytes()
        rel = os.path.relpath(path, root)
        text += f"{stanza}Filename: {rel}\nSize: {len(data)}\nSHA256: {hashlib.sha256(data).hexdigest()}\n\n"
    name = f"main/binary-{debtools.debian_architecture()}/Packages.xz"
    index = lzma.compress(text.encode())
    dist = root / "dists" / "sid"
    (dist / os.path.dirname(name)).mkdir(parents=True, exist_ok=True)
    (dist / name).write_bytes(index)
    (dist / "Release").write_text(
        f"Suite: unstable\nSHA256:\n {hashlib.sha256(index).hexdigest()} {len(index)} {name}\n"
    )
    if (dist / "InRelease").exists():
        (dist / "InRelease").unlink()
    gpg(keys["archive"][0], "--output", str(dist / "InRelease"), "--clearsign", str(dist / "Release"))
    return f"file://{root}"


def archive(tmp_path, keys, libm=False, tools_version="2.2.0+repack-6"):  # noqa: F811
    """hdf5-tools (h5dump, h5diff: the program) depending on libc6 (the loader and libc)."""
    program, libraries = compiled(tmp_path, libm)
    triplet = subprocess.run(["cc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
    libc = {f"usr/lib/{triplet}/{soname}": path for soname, path in libraries.items() if soname != "libm.so.6"}
    root = tmp_path / "archive"
    tools = deb(root, "hdf5-tools", tools_version, {"usr/bin/h5dump": program, "usr/bin/h5diff": program}, "libc6")
    libc6 = deb(root, "libc6", "2.36-9", libc)
    stanzas = [
        (f"Package: hdf5-tools\nSource: hdf5\nVersion: {tools_version}\nDepends: libc6 (>= 2.36)\n", tools),
        ("Package: libc6\nSource: glibc\nVersion: 2.36-9\n", libc6),
    ]
    return publish(root, keys, stanzas)


@pytest.fixture
def machine(tmp_path, keys, monkeypatch):  # noqa: F811
    """This machine with the test's archive in its apt sources, its key the archive key."""
    monkeypatch.setenv("H5STACK_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sources, "DEBIAN_KEYRING", keys["archive"][1])
    return lambda uri: monkeypatch.setattr(sources, "debian_archive_uri", lambda: uri)


def test_a_tree_of_the_pinned_package_and_what_it_needs(tmp_path, keys, machine):  # noqa: F811
    machine(archive(tmp_path, keys))
    tools = debtools.DebianTools(PIN, WHERE)
    prefix = tools.ensure()
    assert tools.status() is None and prefix == tools.prefix
    assert sorted(os.listdir(os.path.join(prefix, "bin"))) == ["h5diff", "h5dump"]
    proc = subprocess.run([os.path.join(prefix, "bin", "h5dump"), "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and "h5dump: Version 2.2.0" in proc.stdout, proc.stdout + proc.stderr
    described = tools.description()
    assert described["origin"] == "debian" and described["hdf5_version"] == "2.2.0"
    assert [p["package"] for p in described["debian_packages"]] == ["hdf5-tools", "libc6"]
    recorded = json.load(open(tools.record))["packages"]
    assert [(p["Package"], p["Version"]) for p in recorded] == [("hdf5-tools", "2.2.0+repack-6"), ("libc6", "2.36-9")]
    # the tree is made again from the kept packages, without the archive
    shutil.rmtree(tmp_path / "archive")
    os.remove(os.path.join(prefix, "bin", "h5diff"))
    assert tools.status() == "bin/h5diff is missing"
    assert tools.ensure() == prefix and tools.status() is None


def test_the_launchers_run_the_tree_where_it_lies_with_its_own_plugins(tmp_path, keys, machine):  # noqa: F811
    """A copy of the tree (an image) runs as it is; HDF5_PLUGIN_PATH names the tree's plugin
    directory whatever the caller's, and LD_PRELOAD does not reach the program."""
    machine(archive(tmp_path, keys))
    copy = tmp_path / "elsewhere"
    shutil.copytree(debtools.DebianTools(PIN, WHERE).ensure(), copy, symlinks=True)
    (tmp_path / "host").mkdir()
    host_libc = compiled(tmp_path / "host")[1]["libc.so.6"]  # harmless in the launcher's shell
    env = dict(os.environ, HDF5_PLUGIN_PATH="/a/stack/plugins", LD_PRELOAD=host_libc)
    proc = subprocess.run([str(copy / "bin" / "h5diff")], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    plugins = proc.stdout.split("plugins: ")[1].splitlines()[0]
    assert os.path.realpath(plugins).startswith(str(copy / "root")) and plugins.endswith("/hdf5/serial/plugins")
    assert "preload: \n" in proc.stdout


def test_a_pinned_version_the_suite_no_longer_lists_says_where_the_pin_is(tmp_path, keys, machine):  # noqa: F811
    machine(archive(tmp_path, keys, tools_version="2.2.0+repack-7"))
    with pytest.raises(
        StepError,
        match=r"sid does not list hdf5-tools 2.2.0\+repack-6 \(it lists: 2.2.0\+repack-7\); "
        r"the version is pinned in stacks.yaml \(hdf5.2.debian_tools\)",
    ):
        debtools.DebianTools(PIN, WHERE).ensure()


def test_a_program_that_would_load_a_library_of_the_host_is_refused(tmp_path, keys, machine):  # noqa: F811
    """The program needs libm, which no package brings: the host's would be loaded."""
    machine(archive(tmp_path, keys, libm=True))
    tools = debtools.DebianTools(PIN, WHERE)
    with pytest.raises(StepError, match=r"h5diff would load libraries the packages do not bring: libm.so.6 => /"):
        tools.ensure()
    assert tools.status() is not None and not os.listdir(os.path.dirname(tools.prefix))  # no tree, no leftovers
