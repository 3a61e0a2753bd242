# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""What is broken where (lib/h5stack/reframe/faults.py): the fault checks' verdicts from
ReFrame's run reports, for `./h5stack run --json` and the performance report."""

import json
import os

from h5stack.reframe import faults, regression


def _case(name, result, environ="mpich-hdf5-1_14", reason=None, fixture=False, phase="sanity"):
    return {
        "display_name": name, "name": name, "result": result, "fail_reason": reason, "fixture": fixture,
        "fail_phase": phase if result == "fail" else None,
        "system": "generic", "partition": "default", "environ": environ,
    }  # fmt: skip


def _report(*cases, start="20261129T100000+0000", cmdline="reframe -r"):
    return {"session_info": {"time_start": start, "cmdline": cmdline}, "runs": [{"testcases": list(cases)}]}


def test_each_verdict_of_a_fault_check_is_told_apart():
    rows = faults.rows_of_report(
        _report(
            _case("mpiio_faults %fs_kind=posix %probe=lost-writes", "pass"),
            _case("mpiio_faults %fs_kind=posix %probe=never-written", "xfail", "openmpi-hdf5-1_14"),
            _case("hdf5_faults %fs_kind=posix %probe=coll-md-cache", "fail", reason="FAULT: failed on 2 of 3 ranks"),
            _case("hdf5_faults %fs_kind=lustre %probe=coll-md-cache", "fail",
                  reason="FAULT: the delete did not return within the timeout on rank 0 (a hang)"),
            _case("hdf5_faults_build ~generic:default+mpich-hdf5-1_14", "fail", fixture=True),
            _case("multifile_workload %fs_kind=posix", "fail"),
        ),
        {"mpich-hdf5-1_14": "mpich-hdf5-1.14"},
    )  # fmt: skip
    seen = [(r["check"], r["probe"], r["fs_kind"], r["stack"], r["verdict"]) for r in rows]
    assert seen == [
        ("mpiio_faults", "lost-writes", "posix", "mpich-hdf5-1.14", "pass"),
        ("mpiio_faults", "never-written", "posix", "openmpi-hdf5-1_14", "xfail"),
        ("hdf5_faults", "coll-md-cache", "posix", "mpich-hdf5-1.14", "fail"),
        ("hdf5_faults", "coll-md-cache", "lustre", "mpich-hdf5-1.14", "hang"),
    ]
    assert rows[0]["program"] == "reframe-tests/mpiio-faults/src/mpiio_faults.c"
    assert all(os.path.exists(os.path.join(faults.paths.ROOT, p)) for p in faults.FAULT_CHECKS.values())


def test_the_newest_verdict_of_each_place_is_kept_and_unreadable_reports_passed_over(tmp_path):
    probe = "hdf5_faults %fs_kind=posix %probe=contig-fill"
    old, new, other = tmp_path / "run-1.json", tmp_path / "run-2.json", tmp_path / "run-3.json"
    old.write_text(json.dumps(_report(_case(probe, "pass"), _case(probe, "pass", "openmpi-hdf5-2"))))
    new.write_text(json.dumps(_report(_case(probe, "xfail"), start="20261129T110000+0000")))
    other.write_text("{ not json")
    os.utime(old, (1, 1))
    os.utime(new, (2, 2))
    rows = faults.latest_rows(str(tmp_path))
    assert [(r["stack"], r["verdict"], r["when"]) for r in rows] == [
        ("mpich-hdf5-1_14", "xfail", "20261129T110000+0000"),
        ("openmpi-hdf5-2", "pass", "20261129T100000+0000"),
    ]


def test_a_run_without_a_verdict_or_a_dry_run_replaces_no_verdict(tmp_path):
    probe = "mpiio_faults %fs_kind=posix %probe=never-written"
    runs = [
        _report(_case(probe, "xfail")),
        _report(_case(probe, "fail", reason="CompilationError: ...", phase="compile")),
        _report(_case(probe, "abort")),
        _report(_case(probe, "pass"), cmdline="reframe --dry-run -r"),
    ]
    for i, report in enumerate(runs):
        path = tmp_path / f"run-{i}.json"
        path.write_text(json.dumps(report))
        os.utime(path, (i + 1, i + 1))
    assert [r["verdict"] for r in faults.latest_rows(str(tmp_path))] == ["xfail"]
    fresh = tmp_path / "other"
    fresh.mkdir()
    (fresh / "run-0.json").write_text(json.dumps(runs[2]))
    assert [r["verdict"] for r in faults.latest_rows(str(fresh))] == ["error"]
    assert faults.verdict(_case(probe, "fail", reason="FAULT: bytes lost")) == "fail"
    assert faults.verdict(_case(probe, "xpass")) == "error"


def test_the_table_has_a_row_per_fault_a_column_per_environment_and_links_each_program():
    report = _report(
        _case("mpiio_faults %fs_kind=posix %probe=never-written", "xfail", "openmpi-hdf5-1_14"),
        _case("mpiio_faults %fs_kind=posix %probe=never-written", "pass"),
        _case("hdf5_faults %fs_kind=posix %probe=coll-md-cache", "fail", reason="FAULT: (a hang)"),
    )
    page = faults.table_html([dict(r, when="") for r in faults.rows_of_report(report)], root="/src")
    assert page.count("<tr>") == 3  # the header, two faults
    assert page.count("<th>generic:default<br>") == 2
    assert "href='file:///src/reframe-tests/mpiio-faults/src/mpiio_faults.c'" in page
    assert "posix: shows (known)" in page and "posix: does not show" in page and "posix: hangs" in page
    assert faults.table_html([]) == ""


def test_the_json_summary_carries_the_fault_rows(tmp_path):
    rows = faults.rows_of_report(_report(_case("mpiio_faults %fs_kind=posix %probe=lost-writes", "pass")))
    path = tmp_path / "summary.json"
    regression.write_summary(str(path), "generic", [], {}, "report.json", 0, 1.0, rows)
    assert json.load(open(path))["faults"] == rows


def test_the_page_names_its_columns_by_stack(tmp_path, monkeypatch):
    """The performance page's table names the stacks as `./h5stack run` does
    (mpich-hdf5-1.14), not ReFrame's environments (mpich-hdf5-1_14)."""
    from h5stack.reframe import report as page

    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "run-1.json").write_text(
        json.dumps(_report(_case("mpiio_faults %fs_kind=posix %probe=lost-writes", "pass")))
    )
    seen = {}
    monkeypatch.setattr(page, "read_perflogs", lambda root: ([{"value": 1}], []))
    monkeypatch.setattr(page, "render", lambda records, problems, src, rows: seen.setdefault("rows", rows) and ("", 0))
    page.write_report(perflogs=str(tmp_path), output=str(tmp_path / "page.html"), reports=str(reports))
    assert [r["stack"] for r in seen["rows"]] == ["mpich-hdf5-1.14"]
