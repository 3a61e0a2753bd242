# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""One table of every H5STACK_* environment variable (lib/h5stack/base/settings.py): the
code reads none past it, the repository names none that it lacks, and docs/settings.md is
the table rendered."""

import os
import re
import subprocess

from conftest import ROOT, h5stack
from h5stack.base import settings

NAMES = {s.name for s in settings.SETTINGS}
#: CMake's names (VERSION read into a variable), not environment variables
NOT_SETTINGS = {"H5STACK_VERSION", "H5STACK_VERSION_FILE"}
READ = re.compile(r"""environ(?:\.get\(|\[)\s*["'](H5STACK_\w+)|getenv\(\s*["'](H5STACK_\w+)""")


def _tracked():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split() if os.path.isfile(os.path.join(ROOT, f))]


def test_the_library_reads_settings_only_through_the_table():
    found = []
    for name in _tracked():
        if name.startswith("lib/") and name.endswith(".py") and not name.endswith("base/settings.py"):
            text = open(os.path.join(ROOT, name)).read()
            found += [f"{name}: {m.group(0)}" for m in READ.finditer(text)]
    assert not found, "read past lib/h5stack/base/settings.py:\n" + "\n".join(found)


def test_every_variable_the_repository_names_is_in_the_table():
    missing = {}
    for name in _tracked():
        if name.endswith(".patch"):  # HDF5's own text
            continue
        try:
            text = open(os.path.join(ROOT, name), encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        for var in set(re.findall(r"\bH5STACK_[A-Z0-9_]*[A-Z0-9]\b", text)) - NAMES - NOT_SETTINGS:
            missing.setdefault(var, name)
    assert not missing, f"H5STACK_* names not in lib/h5stack/base/settings.py: {missing}"


def test_the_checks_find_what_they_look_for():
    assert READ.search('x = os.environ.get("H5STACK_HOME", "")').group(1) == "H5STACK_HOME"
    assert READ.search("os.environ['H5STACK_NO_APT']").group(1) == "H5STACK_NO_APT"


def test_docs_and_help_are_the_table_rendered():
    with open(os.path.join(ROOT, "docs", "settings.md")) as f:
        assert f.read() == settings.markdown(), (
            "docs/settings.md is stale: ./h5stack settings --markdown > docs/settings.md"
        )
    help_text = h5stack("--help", check=True).stdout
    for s in settings.SETTINGS:
        assert (s.name in help_text) == (s.kind == "user"), s.name


def test_an_empty_variable_takes_the_default(monkeypatch):
    monkeypatch.setenv("H5STACK_SLURMD_PORT", "")
    assert settings.get("H5STACK_SLURMD_PORT") == "6918"
    monkeypatch.setenv("H5STACK_SLURMD_PORT", "7000")
    assert settings.get("H5STACK_SLURMD_PORT") == "7000"
