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
    twins = sum(len(t.get("mpis") or config["mpis"]) * len(t["patches"]) for t in config["twins"].values())
    per_mpi = (plain + twins) // len(config["mpis"])
    return {plain + twins, plain, twins, per_mpi}


def _count_pattern(counts):
    words = "|".join([NUMBERS[n] for n in counts if n < len(NUMBERS)] + [str(n) for n in counts])
    return re.compile(
        rf"\b(?:(?:{words})(?: [\w.-]+)? (?:stacks|twins)\b|(?:all|the same) (?:{words})(?= *[)|]))", re.I
    )


def test_no_text_counts_the_stacks():
    """`setup` builds every stack of stacks.yaml; a number in prose goes stale with it."""
    pattern = _count_pattern(_stack_counts())
    names = [n for n in _tracked("*.md", "*.py", "*.def", "*.yaml") if n != "tests/test_one_source.py"]
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
