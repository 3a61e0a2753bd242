# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The harness's own Python code keeps one style: ruff's linter and formatter
(settings in pyproject.toml; ReFrame checks keep ReFrame's style and are excluded).
The C of packages/ keeps HDF5's: clang-format with the .clang-format at the root."""

import os
import shutil
import subprocess
import sys

from conftest import ROOT

RUFF = os.path.join(os.path.dirname(sys.executable), "ruff")
TARGETS = [".", "h5stack"]  # h5stack has no .py suffix


def test_ruff_check():
    proc = subprocess.run([RUFF, "check", *TARGETS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format():
    proc = subprocess.run([RUFF, "format", "--check", *TARGETS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def c_sources():
    """The .c and .h files under packages/ that git tracks or would track (all written
    here: nothing fetched or generated lives there)."""
    cmd = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "packages/*.c", "packages/*.h"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return sorted({f for f in out.split("\0") if f and os.path.isfile(os.path.join(ROOT, f))})


def clang_format():
    path = shutil.which("clang-format")
    assert path, (
        "clang-format is not on PATH: the C style check needs it (Debian 12's clang-format 14, "
        "requirements/debian-test.txt: apt-get install clang-format)"
    )
    return path


def test_clang_format():
    clang_format_path = clang_format()
    files = c_sources()
    assert len(files) > 50, f"only {len(files)} C files under packages/: is this a git checkout?"
    proc = subprocess.run(
        [clang_format_path, "--dry-run", "--Werror", *files], cwd=ROOT, capture_output=True, text=True
    )
    version = subprocess.run([clang_format_path, "--version"], capture_output=True, text=True).stdout.strip()
    assert proc.returncode == 0, (
        f"{version}: C not in the style of .clang-format (fix: clang-format -i FILE...):\n{proc.stderr[-8000:]}"
    )


def test_the_c_style_check_finds_unformatted_code(tmp_path):
    """The root's .clang-format is read (an option clang-format does not know fails it)
    and a file out of style fails the check."""
    (tmp_path / "f.c").write_text("int f(void){return 0;}\n")
    style = "--style=file:" + os.path.join(ROOT, ".clang-format")
    proc = subprocess.run(
        [clang_format(), style, "--dry-run", "--Werror", "f.c"], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode != 0 and "f.c:1:" in proc.stderr, proc.stderr
    fixed = subprocess.run([clang_format(), style, "f.c"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert fixed.stdout == "int\nf(void)\n{\n    return 0;\n}\n"
