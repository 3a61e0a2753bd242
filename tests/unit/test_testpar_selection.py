# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Which of HDF5's testpar programs the hdf5_testpar check runs (reframe-tests/lib/h5checks/testpar.py)."""

import os
import sys
from types import SimpleNamespace

import pytest

from conftest import ROOT

sys.path.append(os.path.join(ROOT, "reframe-tests", "lib"))
from h5checks import bounded, nodes, testpar  # noqa: E402

#: HDF5 1.14.6's testpar programs
NAMES = ["t_2Gio", "t_bigio", "t_cache", "t_cache_image", "t_filters_parallel", "t_init_term", "t_mpi", "t_pflush1",
         "t_pflush2", "t_pmulti_dset", "t_pread", "t_prestart", "t_pshutdown", "t_select_io_dset", "t_shapesame",
         "t_subfiling_vfd", "t_vfd", "testphdf5"]  # fmt: skip


def _names(chosen):
    return [p.split("=")[0] for p in chosen]


def test_mpio_runs_all_but_the_long_programs_readers_after_writers():
    chosen, left = testpar.select(NAMES, "mpio")
    assert sorted(left) == ["t_2Gio", "t_bigio", "t_cache_image", "t_filters_parallel"]
    assert sorted(_names(chosen)) == sorted(set(NAMES) - set(left))
    for reader, writer in testpar.READS_AFTER.items():
        assert _names(chosen).index(reader) == _names(chosen).index(writer) + 1
    assert "testphdf5" in chosen  # no arguments through MPI-IO
    assert sorted(testpar.select(NAMES, "mpio", long=True)[0]) == sorted(set(NAMES) - {"t_cache_image"})


def test_multifile_leaves_out_what_the_exclusions_name_with_their_reasons():
    excl = testpar.exclusions()
    chosen, left = testpar.select(NAMES, "multifile")
    assert set(excl["programs"]) <= set(left) and all(left[n] for n in left)
    assert not set(_names(chosen)) & set(left)
    skip = [p for p in chosen if p.startswith("testphdf5=")]
    assert skip == ["testphdf5=" + " ".join(f"-x {t}" for t in excl["testphdf5"])]


def test_the_shares_partition_the_programs_and_keep_each_reader_with_its_writer():
    whole = _names(testpar.select(NAMES, "mpio")[0])
    halves = [_names(testpar.select(NAMES, "mpio", f"{k}/2")[0]) for k in (1, 2)]
    assert sorted(halves[0] + halves[1]) == sorted(whole) and not set(halves[0]) & set(halves[1])
    assert abs(len(halves[0]) - len(halves[1])) <= 2
    for half in halves:
        for reader, writer in testpar.READS_AFTER.items():
            assert (reader in half) == (writer in half)


@pytest.mark.parametrize("share", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_a_wrong_share_says_what_is_wanted(share):
    with pytest.raises(ValueError, match=r"hdf5_testpar.share=.*K/N"):
        testpar.select(NAMES, "mpio", share)
    with pytest.raises(ValueError, match=r"netcdf_partests.share=.*K/N"):
        bounded.parse_share(share, "netcdf_partests")


def test_a_reader_whose_writer_is_left_out_is_left_out_with_the_reason():
    excl = {"full_only": {"t_pflush1": "say"}, "programs": {}, "testphdf5": {}}
    chosen, left = testpar.select(NAMES, "mpio", excl=excl)
    assert "t_pflush1" not in chosen and "t_pflush2" not in chosen and "t_pflush1" in left["t_pflush2"]


def test_the_programs_are_found_by_name_and_mode(tmp_path):
    for name, mode in [("t_mpi", 0o755), ("testphdf5", 0o755), ("t_notes.txt", 0o644), ("h5ls", 0o755)]:
        (tmp_path / name).write_text("")
        os.chmod(tmp_path / name, mode)
    assert sorted(testpar.found(str(tmp_path))) == ["t_mpi", "testphdf5"]


def test_a_program_the_environment_names_as_known_is_left_out_with_its_reason():
    chosen, left = testpar.select(NAMES, "mpio", known={"t_subfiling_vfd": "does not end here", "t_gone": "x"})
    assert "t_subfiling_vfd" not in chosen and left["t_subfiling_vfd"] == "known on this environment: does not end here"
    assert "t_gone" not in left


def _on(cpus, features, access):
    """A check's stand-in on a partition with cpus a node, features and access options."""
    processor = SimpleNamespace(num_cpus=cpus)
    return SimpleNamespace(current_partition=SimpleNamespace(processor=processor, features=features, access=access))


@pytest.mark.parametrize(
    "cpus, features, access, job",
    [
        (2, [], [], 2),  # one node
        (2, ["multinode"], ["--partition=cluster", "--nodes=2"], 4),  # slurm-cluster: 2 nodes a job
        (8, ["multinode"], ["-N", "3"], 24),
        (0, ["multinode"], ["--nodes=2"], 0),  # not known: nothing is skipped for it
        (2, ["multinode"], ["--partition=cluster"], 2),  # no number of nodes: one node's
    ],
)
def test_the_4_rank_variants_count_the_cpus_of_every_node_of_a_job(cpus, features, access, job):
    assert nodes.job_cpus(_on(cpus, features, access)) == job
