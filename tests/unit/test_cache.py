# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The build cache: a keyed prefix is reused when intact, rebuilt when damaged.

Uses a tiny real CMake project (a library and a program) instead of HDF5, in a
private $H5STACK_HOME, so the rules are checked in seconds."""

import json
import os
import shutil
import subprocess
import time

import pytest

from h5stack.base.ui import StepError
from h5stack.stacks import build

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.20)
project(tiny C)
add_library(tiny SHARED tiny.c)
set_target_properties(tiny PROPERTIES VERSION 1.0 SOVERSION 1)
add_executable(tinyprog main.c)
target_link_libraries(tinyprog tiny)
install(TARGETS tiny tinyprog)
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("H5STACK_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def tiny_component(tmp_path, body="return 42;", fail=False):
    src = tmp_path / "tiny-src"
    src.mkdir(exist_ok=True)
    (src / "CMakeLists.txt").write_text(CMAKELISTS)
    (src / "tiny.c").write_text(f"int tiny(void) {{ {body} }}\n" + ("#error broken\n" if fail else ""))
    (src / "main.c").write_text("int tiny(void);\nint main(void) { return tiny() == 42 ? 0 : 1; }\n")
    builds = []

    def prepare(work):
        builds.append(work)
        return str(src)

    comp = build.Component(
        name="tiny",
        label="tiny",
        inputs={"source_sha256": build.tree_sha256(str(src))},
        prepare=prepare,
        required=["lib/libtiny.so", "bin/tinyprog"],
    )
    return comp, builds


def test_build_then_cached(home, tmp_path):
    comp, builds = tiny_component(tmp_path)
    prefix = comp.ensure()
    assert len(builds) == 1
    assert os.path.isfile(os.path.join(prefix, "bin", "tinyprog"))
    assert os.path.basename(prefix) == f"tiny-{comp.key}"
    assert comp.status() is None
    t0 = time.monotonic()
    assert comp.ensure() == prefix
    assert len(builds) == 1, "an intact cached prefix must not be rebuilt"
    assert time.monotonic() - t0 < 5
    assert not os.listdir(home / "build"), "the build tree is removed after a successful build"


def test_key_changes_with_inputs(home, tmp_path):
    a, _ = tiny_component(tmp_path, body="return 42;")
    b, _ = tiny_component(tmp_path, body="return 40 + 2;")
    assert a.key != b.key
    assert a.prefix != b.prefix


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda p: os.remove(os.path.join(p, "lib", "libtiny.so")), "symbolic link missing"),
        (lambda p: os.remove(os.path.realpath(os.path.join(p, "lib", "libtiny.so"))), "is missing"),
        (lambda p: open(os.path.join(p, "bin", "tinyprog"), "r+b").truncate(100), "has size"),
        (lambda p: open(os.path.join(p, "bin", "tinyprog"), "r+b").write(b"\x7fELG"), "sha256 mismatch"),
        (lambda p: os.remove(os.path.join(p, build.MANIFEST)), "interrupted build"),
    ],
)
def test_damaged_entry_is_detected_and_rebuilt(home, tmp_path, damage, reason):
    comp, builds = tiny_component(tmp_path)
    prefix = comp.ensure()
    damage(prefix)
    assert reason in comp.status()
    assert comp.ensure() == prefix
    assert len(builds) == 2, "a damaged prefix must be rebuilt"
    assert comp.status() is None


def test_failed_build_leaves_no_prefix_and_shows_the_log(home, tmp_path):
    comp, _ = tiny_component(tmp_path, fail=True)
    with pytest.raises(StepError) as err:
        comp.ensure()
    message = str(err.value)
    assert "tiny: build failed" in message
    assert "#error broken" in message, "the log's tail is part of the error"
    assert f"full log: {home}/logs/tiny-{comp.key}.log" in message
    assert not os.path.exists(comp.prefix)
    assert comp.status() == "not built"


@pytest.mark.skipif(not shutil.which("ccache"), reason="ccache is not installed (requirements/debian.txt)")
def test_a_second_entry_of_the_same_sources_compiles_from_the_compiler_cache(home, tmp_path):
    """Two entries of the same sources under other keys (an HDF5 and its twin): the second
    compiles nothing (ccache hits, though its build tree has another path), its key does
    not name the compiler cache, and its program is correct."""
    first, _ = tiny_component(tmp_path)
    first.ensure()
    twin, _ = tiny_component(tmp_path)
    second = build.Component(
        name="tiny", label="tiny twin", inputs={**twin.inputs, "other": 1}, prepare=twin.prepare, required=twin.required
    )
    assert "ccache" not in json.dumps(second.inputs)
    env = {}
    assert build.compiler_cache(env) == {"CMAKE_C_COMPILER_LAUNCHER": "ccache", "CMAKE_CXX_COMPILER_LAUNCHER": "ccache"}
    before = _ccache_hits(env)
    second.ensure()
    assert _ccache_hits(env) - before == 2  # tiny.c and main.c
    lib = {"LD_LIBRARY_PATH": os.path.join(second.prefix, "lib")}  # CMake installs without a RUNPATH
    assert subprocess.run([os.path.join(second.prefix, "bin", "tinyprog")], env=dict(os.environ, **lib)).returncode == 0


def _ccache_hits(env):
    out = subprocess.run(["ccache", "--print-stats"], env=dict(os.environ, **env), capture_output=True, text=True)
    stats = dict(line.split("\t", 1) for line in out.stdout.splitlines() if "\t" in line)
    return int(stats.get("direct_cache_hit", 0)) + int(stats.get("preprocessed_cache_hit", 0))
