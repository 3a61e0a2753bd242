# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Each fact of the project has one source (docs/architecture.md, "Where each fact
lives"): these tests fail when a copy of one appears somewhere else."""

import glob
import os
import re
import subprocess
import sys

import yaml

from conftest import ROOT


def _tracked(*patterns):
    """The tracked files matching git pathspecs (all of them without any)."""
    out = subprocess.run(["git", "ls-files", "--", *patterns], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


def _read(name):
    try:
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        return ""


# -- how many stacks there are: stacks.yaml says it, prose does not repeat it ----------
NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve".split()


def _stack_counts():
    """The counts a text could copy from stacks.yaml: all stacks, the plain ones, the
    twins, and the stacks of one MPI."""
    config = yaml.safe_load(open(os.path.join(ROOT, "stacks.yaml")))
    plain = len(config["mpis"]) * len(config["hdf5"])
    twin_mpis = [m for t in config["twins"].values() for m in (t.get("mpis") or config["mpis"]) for _ in t["patches"]]
    per_mpi = {len(config["hdf5"]) + twin_mpis.count(m) for m in config["mpis"]}
    return {plain + len(twin_mpis), plain, len(twin_mpis), *per_mpi}


def _count_pattern(counts):
    words = "|".join([NUMBERS[n] for n in counts if n < len(NUMBERS)] + [str(n) for n in counts])
    return re.compile(
        rf"(?<![\w.])(?:(?:{words})(?: [\w.-]+)? (?:stacks|twins)\b|(?:all|the same) (?:{words})(?= *[)|]))", re.I
    )


def test_no_text_counts_the_stacks():
    """`setup` builds every stack of stacks.yaml; a number in prose goes stale with it."""
    pattern = _count_pattern(_stack_counts())
    names = [n for n in _tracked("*.md", "*.py", "*.def", "*.yaml") if n != "tests/unit/test_one_source.py"]
    found = []
    for name in names:
        text = _read(name)
        found += [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in pattern.finditer(text)]
    assert not found, "counts of the stacks of stacks.yaml:\n" + "\n".join(found)


def test_the_count_pattern_matches():
    pattern = _count_pattern({4, 8})
    for text in (
        "(default: all four)",
        "All eight stacks",
        "the four twins",
        "each MPI's 4 stacks",
        "| the same four |",
    ):
        assert pattern.search(text), text
    for text in ("a selection of three stacks; four plain + four patched HDF5 builds", "All four programs"):
        assert not pattern.search(text), text


# -- the partitions: named in the site configs only ------------------------------------
SITE_CONFIGS = os.path.join(ROOT, "site-configs")


def _partitions():
    """Every "system:partition" of site-configs/*/reframe.py, as ReFrame loads them."""
    sys.path.insert(0, SITE_CONFIGS)
    import config

    names = set()
    for path in glob.glob(os.path.join(SITE_CONFIGS, "*", "reframe.py")):
        for system in config.load_system(path)["systems"]:
            names |= {f"{system['name']}:{p['name']}" for p in system["partitions"]}
    return names


def test_checks_name_no_partition():
    """A check takes its performance references from the partition's extras
    (`references`, h5checks/performance.py): a table keyed by a site's partition would
    drift from the site configs."""
    partitions = _partitions()
    assert {"generic:default", "lustre-cluster:compute"} <= partitions, partitions
    pattern = re.compile("|".join(re.escape(p) for p in sorted(partitions)))
    found = []
    for name in _tracked("reframe-tests"):
        text = _read(name)
        found += [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in pattern.finditer(text)]
    assert not found, "partitions named in reframe-tests/:\n" + "\n".join(found)


def test_every_partition_that_runs_jobs_takes_a_reference_table():
    sys.path.insert(0, SITE_CONFIGS)
    import config

    for path in glob.glob(os.path.join(SITE_CONFIGS, "*", "reframe.py")):
        for system in config.load_system(path)["systems"]:
            for part in system["partitions"]:
                if "login" not in part.get("features", []):
                    assert part["extras"].get("references"), f"{system['name']}:{part['name']}"


# -- the MPIs' Debian packages: stacks.yaml ---------------------------------------------
def _mpi_packages():
    """{role: [package]} of every MPI of stacks.yaml, read with PyYAML."""
    mpis = yaml.safe_load(open(os.path.join(ROOT, "stacks.yaml")))["mpis"]
    debian = [spec["debian_packages"] for spec in mpis.values() if "debian_packages" in spec]
    return {role: [p for lists in debian for p in lists[role]] for role in ("build", "run")}


def test_the_mpi_packages_are_named_in_stacks_yaml_only():
    """requirements/*.txt and the image's definition take the MPIs' packages from
    stacks.yaml (apt.ensure_packages; images.build_args): none of them names one."""
    packages = sorted({p for names in _mpi_packages().values() for p in names})
    flavours = yaml.safe_load(open(os.path.join(ROOT, "stacks.yaml")))["mpis"]
    found = []
    for name in _tracked("requirements/*.txt"):
        for n, line in enumerate(_read(name).splitlines(), 1):
            words = line.split("#", 1)[0].split()
            if words and words[0] in packages:
                found.append(f"{name}:{n}: {words[0]}")
    definition = "containers/h5stack.def"
    for n, line in enumerate(_read(definition).splitlines(), 1):
        for pkg in packages:
            # a package named like its MPI flavour (mpich: MPI=mpich is the flavour) counts
            # on an apt-get line or in a quoted list of packages
            if pkg in flavours and "apt-get" not in line and not re.search(rf'="[^"]*\b{pkg}\b', line):
                continue
            if re.search(rf"(?<![\w.{{-]){re.escape(pkg)}(?![\w.}}-])", line.split("#", 1)[0]):
                found.append(f"{definition}:{n}: {pkg}")
    assert not found, "the MPIs' Debian packages (stacks.yaml) named again:\n" + "\n".join(found)


def test_apt_reads_the_mpi_packages_as_yaml_does():
    """apt.py reads stacks.yaml without PyYAML: the same lists as PyYAML's."""
    from h5stack.machine import apt

    for role, expected in _mpi_packages().items():
        assert apt.mpi_packages(role) == expected, role


def test_each_mpi_is_identified_by_a_package_it_builds_with():
    """A Debian MPI by a package it builds with; an MPI from wheels by its pinned wheels."""
    from h5stack.stacks import wheels

    for name, spec in yaml.safe_load(open(os.path.join(ROOT, "stacks.yaml")))["mpis"].items():
        if "wheels" in spec:
            assert "debian_package" not in spec and "debian_packages" not in spec, name
            assert set(wheels.pinned_lines(spec["wheels"])) == set(spec["wheels"]), name
        else:
            assert spec["debian_package"] in spec["debian_packages"]["build"], name


# -- the project's version: VERSION ----------------------------------------------------
def _version():
    text = _read("VERSION")
    assert re.fullmatch(r"\d+\.\d+\.\d+\n", text), f"VERSION: {text!r} is not one line MAJOR.MINOR.PATCH"
    return text.strip()


def test_the_cmake_projects_take_version():
    """Each project of packages/ reads VERSION (project(... VERSION ${H5STACK_VERSION})),
    through the one file every package includes first."""
    projects = _tracked(":(glob)packages/*/CMakeLists.txt")
    assert len(projects) >= 4, projects
    shared = "packages/vfd-common/cmake/h5stack_package.cmake"
    assert "file(STRINGS ${H5STACK_VERSION_FILE} H5STACK_VERSION" in _read(shared)
    for name in projects:
        text = _read(name)
        declared = re.findall(r"^project\(\S+ VERSION (\S+)", text, re.M)
        assert declared == ["${H5STACK_VERSION}"], f"{name}: project(... VERSION {declared})"
        include = "include(${CMAKE_CURRENT_SOURCE_DIR}/../vfd-common/cmake/h5stack_package.cmake)"
        assert include in text.split("\nproject(")[0], f"{name}: {shared} is not included before project()"


def test_the_python_package_takes_version():
    import tomllib

    project = tomllib.loads(_read("python/pyproject.toml"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"file": "VERSION"}
    link = os.path.join(ROOT, "python", "VERSION")
    assert os.path.islink(link) and os.path.realpath(link) == os.path.join(ROOT, "VERSION")
    assert not re.search(r"__version__\s*=\s*[\"']\d", _read("python/src/h5vfd/__init__.py"))


def test_the_spack_recipes_name_version():
    """Spack reads no file at concretization: the recipes' release is a literal, equal to
    VERSION (the versions of other projects' tarballs, sha256=, are theirs)."""
    version = _version()
    releases = []
    for name in _tracked("spack-repo/*.py"):
        found = re.findall(r"^\s*version\(\"([^\"]+)\"(?![^)]*sha256=)", _read(name), re.M)
        releases += [(name, v) for v in found if v != "main"]
    assert releases, "no release in spack-repo/"
    assert all(v == version for _, v in releases), f"VERSION is {version}; the recipes name {releases}"


def test_no_copy_of_the_version_in_source():
    version = re.escape(_version())
    allowed = {"VERSION"}
    found = []
    for name in _tracked("*.c", "*.h", "*CMakeLists.txt", "*.toml", "*.py", "*.cmake"):
        if name in allowed or name.startswith("spack-repo/"):
            continue
        text = _read(name)
        found += [
            f"{name}:{text.count(chr(10), 0, m.start()) + 1}"
            for m in re.finditer(rf"(?<![\w.]){version}(?![\w.])", text)
        ]
    assert not found, f"the version {_version()} written again:\n" + "\n".join(found)


def test_the_error_classes_take_the_version_from_the_build():
    """H5Eregister_class's version string is H5STACK_VERSION (CMake's define, or the HDF5
    patch's), never a literal."""
    calls = []
    for name in _tracked(":(glob)packages/**/*.c"):
        calls += [(name, m) for m in re.findall(r"H5Eregister_class\(([^;]*)\);", _read(name))]
    assert calls, "no H5Eregister_class in packages/"
    for name, args in calls:
        assert args.replace(" ", "").endswith(",H5STACK_VERSION"), f"{name}: H5Eregister_class({args})"
    # built into HDF5 (no CMake of ours): the patches define it from VERSION
    for name in _tracked("spack-repo/*.patch"):
        assert f'+#define H5STACK_VERSION "{_version()}"' in _read(name), f"{name}: run `./h5stack patches`"


# -- the drivers' C constants in Python: generated from the headers ----------------------
def _c_strings():
    """{value: macro} of the string #defines of the public headers and of the constants
    h5vfd takes from the C side (pyconstants.CONSTANTS: strings and integers)."""
    from h5stack.stacks import pyconstants

    found = {}
    for name in _tracked(":(glob)packages/*/include/*.h"):
        found |= {v: m for m, v in re.findall(r'^#\s*define\s+(\w+)\s+"([^"]*)"', _read(name), re.M)}
    for header, macro in pyconstants.CONSTANTS.values():
        value = pyconstants.c_value(header, macro)
        found[value.strip('"') if value.startswith('"') else int(value)] = macro
    return found


def test_h5vfd_constants_are_generated_from_the_headers():
    from h5stack.stacks import pyconstants

    assert _read(os.path.relpath(pyconstants.TARGET, ROOT)) == pyconstants.render(), (
        "python/src/h5vfd/_cnames.py is stale: run `./h5stack patches`"
    )


def test_h5vfd_holds_no_copy_of_a_c_constant():
    """h5vfd names the drivers' C constants through _cnames (generated), never as literals."""
    import ast

    constants = _c_strings()
    assert {"multifile", "dsm", "metafile"} <= set(constants), constants
    found = []
    for name in _tracked("python/src/h5vfd/*.py"):
        if name.endswith("/_cnames.py"):
            continue
        tree = ast.parse(_read(name))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in constants and id(node) not in docstrings:
                found.append(f"{name}:{node.lineno}: {node.value!r} ({constants[node.value]})")
    assert not found, "C constants copied into h5vfd (use h5vfd._cnames):\n" + "\n".join(found)


# -- the HDF5 patches: one copy, beside the hdf5 recipe ---------------------------------
def test_no_patch_is_tracked_twice():
    """Spack needs the recipe's patches beside its package.py, and the twins apply the
    same files (paths.PATCHES_DIR): no second copy of a patch anywhere in the tree."""
    import hashlib

    seen, found = {}, []
    for name in _tracked("*.patch"):
        with open(os.path.join(ROOT, name), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if digest in seen:
            found.append(f"{name} = {seen[digest]}")
        seen.setdefault(digest, name)
    assert not found, "patches tracked twice:\n" + "\n".join(found)


def test_the_twins_patches_are_the_recipes():
    from h5stack.base import paths

    twins = yaml.safe_load(open(os.path.join(ROOT, "stacks.yaml")))["twins"]
    recipe = _read("spack-repo/spack_repo/h5stack/packages/hdf5/package.py")
    for twin in twins.values():
        for patch in twin["patches"].values():
            assert os.path.isfile(os.path.join(paths.PATCHES_DIR, patch)), patch
            assert f'patch("{patch}"' in recipe, patch


def _releases():
    """(number, commit) of every release the recipes' base class names."""
    text = open(os.path.join(ROOT, "spack-repo", "spack_repo", "h5stack", "build_systems", "h5stack.py")).read()
    return re.findall(r'version\("([\d.]+)", commit="([0-9a-f]{40})"\)', text)


def _git(*args):
    return subprocess.run(["git", "-c", "core.fileMode=false", *args], cwd=ROOT, capture_output=True, text=True)


def test_the_hdf5_patches_ship_with_the_release_they_name():
    """hdf5 +multifile (the patches beside the recipe, made from this tree) and the
    recipes of the release (hdf5-vfd-multifile, py-h5vfd: built from its commit) are one
    source: every file the patches are made from is the same at that commit as here,
    VERSION included (none added or removed either), and the patches carry each. A change
    to the driver is released in two commits: the change (with VERSION raised and the
    patches regenerated), then the recipes naming that commit."""
    from h5stack.base import paths
    from h5stack.spack import patches

    specs = [f":(glob){p}" for p in (*patches.INPUT_SOURCES, *patches.INPUT_HEADERS, patches.INPUT_VERSION)]
    releases = _releases()
    assert releases, "no release in the recipes' base class"
    for number, commit in releases:
        proc = _git("diff", "--name-status", commit, "--", *specs)
        assert proc.returncode == 0, (
            f"release {number}: git cannot compare with {commit} (a shallow clone? `git fetch --unshallow`): "
            f"{proc.stderr.strip()}"
        )
        assert not proc.stdout.strip(), (
            f"release {number} ({commit}) ships other driver sources than the HDF5 patches are made from "
            f"here:\n{proc.stdout}commit this change with VERSION raised, then name that commit as the "
            "release in spack-repo/spack_repo/h5stack/build_systems/h5stack.py"
        )
    sources, headers, _ = patches.inputs()
    for name in glob.glob(os.path.join(paths.PATCHES_DIR, "*.patch")):
        added = {line[1:] for line in open(name).read().splitlines() if line.startswith("+")}
        for path in sources + headers:
            missing = [line for line in open(path).read().splitlines() if line not in added]
            assert not missing, f"{name} lacks lines of {path}: {missing[:3]} (./h5stack patches)"


def test_every_release_the_recipes_name_is_a_commit_of_this_history():
    """A release of the Spack recipes (version("X", commit=...)) is a commit of this
    history; where the clone has the tag vX, it names the same commit."""
    releases = _releases()
    assert releases, "no release in the recipes' base class"
    for number, commit in releases:
        exists = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True)
        assert exists.returncode == 0, f"release {number}: {commit} is no commit of this history"
        tag = subprocess.run(
            ["git", "rev-list", "-n", "1", f"v{number}", "--"], cwd=ROOT, capture_output=True, text=True
        )
        assert tag.returncode != 0 or tag.stdout.strip() == commit, f"v{number} is {tag.stdout.strip()}, not {commit}"


def test_the_netcdf_overlay_builds_the_release_of_the_local_stacks():
    """spack-repo's netcdf-c adds the release the local stacks build (stacks.yaml
    netcdf_builds), with the checksum of the same bytes, and the environments ask for it."""
    source = yaml.safe_load(open(os.path.join(ROOT, "stacks.yaml")))["netcdf_builds"]["source"]
    recipe = _read("spack-repo/spack_repo/h5stack/packages/netcdf_c/package.py")
    assert re.findall(r'version\("([\d.]+)", sha256="([0-9a-f]{64})"\)', recipe) == [
        (str(source["upstream_version"]), source["sha256"])
    ]
    manifest = _read("environments/mpich-hdf5-1.14/spack.yaml")
    assert f"netcdf-c@{source['upstream_version']} +mpi" in manifest
