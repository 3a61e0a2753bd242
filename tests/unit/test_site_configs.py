# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The ReFrame harness itself: site configs load (and malformed ones are refused with
the file and the reason), every system is accepted by ReFrame, and dry runs on the Lustre
and GPFS templates write job scripts with the configured striping, hints and
alignment. The file-system checks on a stack: tests/integration/test_filesystem_checks.py."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, h5stack

SITE_CONFIGS = os.path.join(ROOT, "site-configs")
SYSTEMS = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(SITE_CONFIGS, "*", "reframe.py")))
FS_CONFIG = os.path.join(ROOT, "tests", "data", "generic_filesystem.py")


@pytest.fixture(scope="module")
def loader():
    import sys

    sys.path.insert(0, SITE_CONFIGS)
    import config

    return config


def test_the_five_systems_exist():
    assert SYSTEMS == ["generic", "gpfs-cluster", "lustre-cluster", "slurm-cluster", "slurm-local"]


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_site_config_loads(loader, system):
    config = loader.load_system(os.path.join(SITE_CONFIGS, system, "reframe.py"))
    assert config["systems"][0]["name"] == system
    for part in config["systems"][0]["partitions"]:
        if part["scheduler"] != "local" or system in ("generic", "slurm-local", "slurm-cluster"):
            assert part["extras"]["filesystems"], f"{system}:{part['name']} has no file system"


CONFIG_FILES = [os.path.join(SITE_CONFIGS, "config.py")] + sorted(
    glob.glob(os.path.join(ROOT, "tests", "data", "*.py"))
)
CHECK_FILES = sorted(glob.glob(os.path.join(ROOT, "reframe-tests", "*", "*.py")))


@pytest.mark.parametrize("path", CONFIG_FILES + CHECK_FILES, ids=lambda p: os.path.relpath(p, ROOT))
def test_loading_a_file_under_reframe_keeps_the_python_path(path):
    """ReFrame loads configurations and checks with its own sys.path entry appended and
    removes it by position afterwards: a file that inserts at the front makes it remove
    another one (Python's standard library, then `import xml` fails in ReFrame)."""
    code = (
        "import sys, reframe.utility as u; before = list(sys.path); "
        "u.import_module_from_file(sys.argv[1], load_parents=True); "
        "lost = [p for p in before if p not in sys.path]; print('lost:', lost); sys.exit(1 if lost else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code, path], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.mark.parametrize("system", SYSTEMS)
def test_reframe_accepts_every_system(system, tmp_path):
    proc = subprocess.run(
        ["reframe", "-C", ":" + os.path.join(SITE_CONFIGS, "config.py"), "--system", system, "-l",
         "--prefix", str(tmp_path), "--perflogdir", str(tmp_path / "perflogs")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Found" in proc.stdout and "check(s)" in proc.stdout, proc.stdout[-2000:]
    # a check file that does not load is only a warning to ReFrame, and its checks vanish
    skipped = re.findall(r"skipping test file .*", proc.stdout + proc.stderr)
    assert not skipped, skipped


BASE = """
import common
site_configuration = {{"systems": [{{
    "name": {name!r}, "hostnames": [".*"],
    "partitions": {partitions}}}],
    "environments": [{{"name": "builtin", "cc": "cc"}}]}}
"""
GOOD_FS = (
    "{'name': 'scratch', 'path': '/lus/scratch', 'type': 'lustre', 'lustre': {'stripe_count': 4, 'stripe_size': '1M'}}"
)
CEPHFS = (
    "{'name': 'scratch', 'path': '/ceph/scratch', 'type': 'fuse.ceph-fuse', "
    "'cephfs': {'stripe_unit': '1M', 'stripe_count': 2, 'object_size': '4M'}}"
)
MALFORMED = {
    "wrong-name": ({"name": "elsewhere"}, "the system is named 'elsewhere', its folder 'bad'"),
    "unknown-environ": ({"environs": ["builtin", "nosuch"]}, "environment 'nosuch' is not defined for this system"),
    "missing-feature": ({"features": []}, "a lustre file system, but the partition lacks the feature 'lustre'"),
    "relative-path": (
        {"fs": GOOD_FS.replace("/lus/scratch", "scratch")},
        "filesystems[0].path: 'scratch' is not absolute",
    ),
    "stripe-count": (
        {"fs": GOOD_FS.replace("'stripe_count': 4", "'stripe_count': 0")},
        "filesystems[0].lustre.stripe_count: 0 is not a stripe count: -1 (all OSTs) or a positive integer",
    ),
    "stripe-size": ({"fs": GOOD_FS.replace("'1M'", "'big'")}, "lustre.stripe_size: 'big' is not a size"),
    "lustre-on-ext4": (
        {"fs": GOOD_FS.replace("'type': 'lustre'", "'type': 'ext4'"), "features": ["posixfs"]},
        "Lustre settings on a ext4 file system",
    ),
    "unknown-key": ({"fs": GOOD_FS.replace("'name'", "'stripes': 2, 'name'")}, "('stripes' was unexpected)"),
    "missing-type": ({"fs": "{'name': 'scratch', 'path': '/x'}"}, "filesystems[0]: 'type' is a required property"),
    # values of the wrong type: the key path and what was expected, never a traceback
    "lustre-not-a-dict": (
        {"fs": GOOD_FS.replace("{'stripe_count': 4, 'stripe_size': '1M'}", "8")},
        "systems[0].partitions[0].extras.filesystems[0].lustre: 8 is not of type 'object'",
    ),
    "unknown-references": (
        {"extras": f"{{'filesystems': [{GOOD_FS}], 'references': 'laptop'}}"},
        "extras.references: 'laptop' is not one of ['local', 'cluster']",
    ),
    "extras-none": ({"extras": "None"}, "systems[0].partitions[0].extras: None is not of type 'object'"),
    "partition-an-integer": ({"partitions": "[3]"}, "systems[0].partitions[0]: 3 is not of type 'object'"),
    "environs-a-string": ({"environs": "'builtin'"}, "partitions[0].environs: 'builtin' is not of type 'array'"),
    "filesystem-a-string": ({"fs": "'scratch'"}, "extras.filesystems[0]: 'scratch' is not of type 'object'"),
    "syntax": ({"extra": "site_configuration = {"}, "cannot be loaded: SyntaxError"),
    # CephFS's layout: all three values, an object a whole number of stripe units, on CephFS only
    "cephfs-object-size": (
        {"fs": CEPHFS.replace("'object_size': '4M'", "'object_size': '1536K'"), "features": ["cephfs"]},
        "CephFS's object_size must be a multiple of its stripe_unit",
    ),
    "cephfs-missing-count": (
        {"fs": CEPHFS.replace("'stripe_count': 2, ", ""), "features": ["cephfs"]},
        "filesystems[0].cephfs: 'stripe_count' is a required property",
    ),
    "cephfs-on-ext4": (
        {"fs": CEPHFS.replace("'type': 'fuse.ceph-fuse'", "'type': 'ext4'"), "features": ["posixfs"]},
        "CephFS settings on a ext4 file system",
    ),
    "cephfs-missing-feature": ({"fs": CEPHFS}, "a cephfs file system, but the partition lacks the feature 'cephfs'"),
}


def _site_config(
    name="bad", environs=("builtin",), features=("lustre",), fs=GOOD_FS, extras=None, partitions=None, extra=""
):
    """The text of a one-system site config; each argument replaces one part of it."""
    extras = extras or f"{{'filesystems': [{fs}]}}"
    environs = environs if isinstance(environs, str) else repr(list(environs))
    partitions = partitions or (
        f"[{{'name': 'p', 'scheduler': 'local', 'launcher': 'local', 'environs': {environs}, "
        f"'features': {list(features)!r}, 'extras': {extras}}}]"
    )
    return textwrap.dedent(BASE.format(name=name, partitions=partitions)) + extra


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_loader_rejects_malformed_site_config(loader, tmp_path, case):
    changes, message = MALFORMED[case]
    path = tmp_path / "bad" / "reframe.py"
    path.parent.mkdir()
    path.write_text(_site_config(**changes))
    with pytest.raises(loader.SiteConfigError) as err:
        loader.load_system(str(path))
    assert str(err.value).startswith(str(path)), err.value
    assert message in str(err.value), err.value


@pytest.mark.parametrize("fs, features", [(GOOD_FS, ["lustre"]), (CEPHFS, ["cephfs"])], ids=["lustre", "cephfs"])
def test_loader_accepts_the_good_variant(loader, tmp_path, fs, features):
    path = tmp_path / "bad" / "reframe.py"
    path.parent.mkdir()
    path.write_text(_site_config(fs=fs, features=features))
    assert loader.load_system(str(path))["systems"][0]["name"] == "bad"


def _dry_run(system, tmp_path):
    """A dry run of the template's system in a home of its own (this Python environment: no
    bootstrap); (its test cases, their job scripts)."""
    home = tmp_path / "home"
    env = dict(os.environ, H5STACK_HOME=str(home), H5STACK_VENV=sys.prefix)
    summary = tmp_path / "summary.json"
    proc = h5stack("run", "--system", system, "--json", str(summary), "multifile_workload", "--", "--dry-run", env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.load(open(summary))
    assert result["totals"]["passed"] > 0 and result["totals"]["failed"] == 0, result["totals"]
    assert {c["result"] for c in result["cases"]} == {"generated"}
    assert os.path.isdir(home / "perflogs-dry-run") and not os.path.exists(home / "perflogs")
    cases = [c for c in json.load(open(result["reframe_report"]))["runs"][-1]["testcases"] if not c["fixture"]]
    scripts = {}
    for case in cases:
        with open(os.path.join(case["stagedir"], "rfm_job.sh")) as f:
            scripts[(case["name"], case["environ"])] = f.read()
    return cases, scripts


def test_dry_run_on_lustre_template_applies_striping_hints_alignment(tmp_path):
    cases, scripts = _dry_run("lustre-cluster", tmp_path)
    writes = {k: v for k, v in scripts.items() if k[0].startswith("multifile_workload_write")}
    assert len(writes) == 3 and len(scripts) == 6, sorted(scripts)  # 3 stacks x write, read
    for script in writes.values():
        assert "#SBATCH --account=project_000000" in script
        assert "module load PrgEnv-gnu cray-mpich" in script
        assert 'fsdir="/lus/scratch/$USER/h5stack/' in script
        assert 'lfs setstripe -c 8 -S 4M "$fsdir"' in script
        assert (
            'MPICH_MPIIO_HINTS="*:cb_nodes=8:romio_cb_write=enable:romio_ds_write=disable:striping_factor=8:striping_unit=4194304"'
            in script
        )
        assert script.count("--alignment 4194304") == 2  # the MPI-IO reference and multifile
        assert re.search(r"^srun .*mf_workload \"\$fsdir/mf.h5\" --driver multifile", script, re.M)
    stagedir = next(c["stagedir"] for c in cases if c["name"].startswith("multifile_workload_write"))
    with open(os.path.join(stagedir, "romio-hints")) as f:
        assert f.read() == (
            "cb_nodes 8\nromio_cb_write enable\nromio_ds_write disable\nstriping_factor 8\nstriping_unit 4194304\n"
        )
    reads = [v for k, v in scripts.items() if k[0].startswith("multifile_workload_read")]
    assert all("lfs setstripe" not in s and "srun h5mf merge" in s for s in reads)


def test_dry_run_on_gpfs_template_applies_largeblock_hint_alignment(tmp_path):
    cases, scripts = _dry_run("gpfs-cluster", tmp_path)
    writes = {k: v for k, v in scripts.items() if k[0].startswith("multifile_workload_write")}
    assert len(writes) == 4, sorted(writes)
    for (_name, environ), script in writes.items():
        assert 'fsdir="/gpfs/projects/$USER/h5stack/' in script
        assert "lfs setstripe" not in script
        assert "IBM_largeblock_io=true" in script and "cb_buffer_size=16777216" in script
        assert script.count("--alignment 16777216") == 2
        mpi = "pmix" if environ.startswith("openmpi") else "pmi2"
        assert f"export SLURM_MPI_TYPE={mpi}" in script


def test_run_names_the_site_config_and_the_reason_in_one_line(tmp_path, monkeypatch):
    """`./h5stack run` checks the merged configuration before anything runs: a malformed
    site config is one error naming its file and the reason (no traceback)."""
    from h5stack.base.ui import StepError
    from h5stack.reframe import regression

    copy = tmp_path / "site-configs"
    shutil.copytree(SITE_CONFIGS, copy)
    (copy / "generic" / "reframe.py").write_text("# no site_configuration here\n")
    monkeypatch.setattr(regression.paths, "SITE_CONFIGS", str(copy))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(os.path.join(ROOT, d) for d in ("lib", "reframe-tests/lib")))
    with pytest.raises(StepError) as err:
        regression.config_file("generic")
    message = str(err.value)
    assert message == f"{copy / 'generic' / 'reframe.py'}: defines no `site_configuration` dictionary", message


@pytest.mark.parametrize("mpi", ["mpich", "openmpi", "mpich5", "openmpi5", "impi"])
def test_only_an_mpi_that_an_image_carries_names_an_image(mpi):
    """The container checks run in a stack's environment only where an image carries its
    MPI (Debian's, one per family); for the wheels' MPIs no image is named, so no check
    points users to `./h5stack containers build` of an MPI it cannot build."""
    from h5stack.machine import images
    from h5stack.reframe.environs import container_image

    image = container_image(mpi)
    if mpi in ("mpich", "openmpi"):
        assert image and image.endswith(f"h5stack-{mpi}.sif")
    else:
        assert image is None
    assert (image is not None) == (mpi in images.FLAVOURS)
