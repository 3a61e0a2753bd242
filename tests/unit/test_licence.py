# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Every source file names its licence (an SPDX line in its first three lines): h5stack
is BSD-3-Clause (LICENSE, compatible with HDF5's licence, which its patches extend);
the Spack recipes are (Apache-2.0 OR MIT), Spack's own licence, so that they can move
into Spack's package repository (spack-repo/LICENSE-APACHE, spack-repo/LICENSE-MIT)."""

import os
import re
import subprocess

import pytest

from conftest import ROOT

PROJECT = "BSD-3-Clause"
RECIPES = "(Apache-2.0 OR MIT)"
#: file kinds that are not source: documentation, generated patches of HDF5's own files,
#: package lists read as data, licence texts, markers
NOT_SOURCE = re.compile(r"(\.md|\.patch|/py\.typed|^\.gitignore|(^|/)LICENSE[-A-Z]*|^requirements/.*\.txt)$")
SOURCE_SUFFIXES = (".c", ".h", ".py", ".sh", ".cmake", ".yaml", ".yml", ".toml", ".def", ".in", "CMakeLists.txt")


def licence_of(path):
    """The licence a file declares (its SPDX identifier in the first three lines), or None."""
    with open(path, errors="replace") as f:
        head = "".join(f.readline() for _ in range(3))
    m = re.search(r"SPDX-License-Identifier: ([^*\n]+?)\s*(\*/)?$", head, re.M)
    return m.group(1) if m else None


def is_source(rel, path):
    if NOT_SOURCE.search(rel):
        return False
    if rel.endswith(SOURCE_SUFFIXES):
        return True
    with open(path, "rb") as f:
        return f.read(2) == b"#!"  # scripts without a suffix (./h5stack, .ci/run)


def tracked_files():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f and os.path.isfile(os.path.join(ROOT, f))]


def expected_licence(rel):
    return RECIPES if rel.startswith("spack-repo/") else PROJECT


def test_every_source_file_names_its_licence():
    checked, wrong = 0, []
    for rel in tracked_files():
        path = os.path.join(ROOT, rel)
        if not is_source(rel, path):
            continue
        checked += 1
        found = licence_of(path)
        if found != expected_licence(rel):
            wrong.append(f"{rel}: {found or 'no SPDX-License-Identifier line'} (expected {expected_licence(rel)})")
    assert checked > 200, f"only {checked} source files found: is this a git checkout?"
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    "text, found",
    [
        ("#!/bin/sh\n# Copyright x. SPDX-License-Identifier: BSD-3-Clause\n", PROJECT),
        ("/* Copyright x. SPDX-License-Identifier: BSD-3-Clause */\n#include <a.h>\n", PROJECT),
        ("# SPDX-License-Identifier: (Apache-2.0 OR MIT)\n", RECIPES),
        ('"""a module without a licence line"""\n', None),
        ("\n\n\n# SPDX-License-Identifier: BSD-3-Clause\n", None),  # past the first three lines
    ],
)
def test_the_check_finds_a_file_without_one(tmp_path, text, found):
    (tmp_path / "f").write_text(text)
    assert licence_of(tmp_path / "f") == found


def test_licence_files_and_recipes_agree():
    with open(os.path.join(ROOT, "LICENSE")) as f:
        assert f.readline().strip() == "BSD 3-Clause License"
    for name, first in (("LICENSE-APACHE", "Apache License"), ("LICENSE-MIT", "MIT License")):
        with open(os.path.join(ROOT, "spack-repo", name)) as f:
            assert first in f.read(200), name
    with open(os.path.join(ROOT, "python", "pyproject.toml")) as f:
        assert f'license = "{PROJECT}"' in f.read()
    base = os.path.join(ROOT, "spack-repo", "spack_repo", "h5stack", "build_systems", "h5stack.py")
    with open(base) as f:
        assert f'license("{PROJECT}"' in f.read(), "the recipes declare another licence for h5stack"
