# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""What is broken where: the fault checks' verdicts as a table, fault by environment.

The fault checks (FAULT_CHECKS) run one probe per fault class (their `probe` parameter)
in each environment and on each file-system kind of a partition. A probe passes where
its fault does not show; it is an expected failure where the fault shows and the
environment names it as known (`mpiio_known_faults`, `hdf5_known_faults`); it fails
where the fault shows unknown, and says "(a hang)" where a step did not return (the
probe's own bound, or the check's time limit). This module reads those verdicts from
ReFrame's run reports: for programs, the "faults" of `./h5stack run --json`; for
readers, a section of the performance report (report.py), each row linked to its
program.
"""

import glob
import html
import json
import os
import re

from h5stack.base import paths
from h5stack.reframe.perflog import split_display_name

#: the fault checks and the program each runs (relative to the checkout)
FAULT_CHECKS = {
    "mpiio_faults": "reframe-tests/mpiio-faults/src/mpiio_faults.c",
    "hdf5_faults": "reframe-tests/hdf5-faults/src/hdf5_faults.c",
}
#: a verdict and what the table says of it
VERDICTS = {
    "pass": "does not show",
    "xfail": "shows (known)",
    "fail": "shows",
    "hang": "hangs",
    "skip": "not run",
    "error": "no verdict",
}
HANG = re.compile(r"\(a hang\)|timed out", re.I)
#: the run reports the page reads at most (the newest)
NEWEST_REPORTS = 200


def verdict(case):
    """pass, xfail, fail, hang or skip of a testcase of a ReFrame report; error where the
    probe gave none (a failure before its sanity: a build, a job that did not start; an
    aborted run, a failed dependency)."""
    result, reason = case.get("result"), case.get("fail_reason") or ""
    if result in ("pass", "xfail", "skip"):
        return result
    if result == "fail" and HANG.search(reason):
        return "hang"
    return "fail" if result == "fail" and case.get("fail_phase") == "sanity" else "error"


def fault_row(case, stack_names=None):
    """A testcase of a ReFrame run report as a row of the fault table, or None when it is
    not a fault check's (fixtures neither)."""
    check, params = split_display_name(case.get("display_name") or case.get("name", ""))
    if check not in FAULT_CHECKS or case.get("fixture"):
        return None
    environ = case.get("environ", "")
    return {
        "check": check,
        "probe": params.get("probe", ""),
        "fs_kind": params.get("fs_kind", ""),
        "system": f"{case.get('system', '')}:{case.get('partition', '')}",
        "stack": (stack_names or {}).get(environ, environ),
        "verdict": verdict(case),
        "reason": case.get("fail_reason") or "",
        "program": FAULT_CHECKS[check],
    }


def rows_of_report(report, stack_names=None):
    """The fault rows of the last run of a ReFrame JSON report (a dict)."""
    cases = report["runs"][-1]["testcases"] if report.get("runs") else []
    return [row for row in (fault_row(c, stack_names) for c in cases) if row]


def rows_of_file(path, stack_names=None):
    """The fault rows of the ReFrame JSON report at path."""
    with open(path) as f:
        return rows_of_report(json.load(f), stack_names)


def latest_rows(reports_dir=None, stack_names=None):
    """The newest verdict of every (check, probe, file system, system, stack) over the run
    reports in reports_dir (run-*.json; the newest NEWEST_REPORTS), each with its run's
    start time ("when"); stack_names maps ReFrame environment names to stack names. A run without a verdict (error) replaces none; dry runs
    (--dry-run: every case passes without running) and unreadable reports are passed over."""
    reports_dir = reports_dir or paths.sub("reports")
    newest = {}
    for path in _newest_reports(reports_dir):  # oldest first: a newer verdict replaces an older one
        try:
            with open(path) as f:
                report = json.load(f)
            session = report.get("session_info") or {}
            rows = [] if "--dry-run" in str(session.get("cmdline", "")) else rows_of_report(report, stack_names)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        for row in rows:
            key = (row["check"], row["probe"], row["fs_kind"], row["system"], row["stack"])
            if row["verdict"] != "error" or key not in newest:
                newest[key] = dict(row, when=session.get("time_start", ""))
    return [newest[k] for k in sorted(newest)]


def _newest_reports(reports_dir):
    """The run reports of reports_dir, oldest first (the newest NEWEST_REPORTS; one removed
    meanwhile is left out)."""
    stamped = []
    for path in glob.glob(os.path.join(reports_dir, "run-*.json")):
        try:
            stamped.append((os.path.getmtime(path), path))
        except OSError:
            continue
    return [path for _, path in sorted(stamped)[-NEWEST_REPORTS:]]


def table_html(rows, root=None):
    """The table fault by environment: a row per check and probe (linked to its program
    under root, the checkout), a column per system:partition and environment, in each
    cell the verdict per file-system kind."""
    if not rows:
        return ""
    root = root or paths.ROOT
    faults = sorted({(r["check"], r["probe"]) for r in rows})
    places = sorted({(r["system"], r["stack"]) for r in rows})
    cells = {}
    for r in rows:
        cells.setdefault((r["check"], r["probe"], r["system"], r["stack"]), []).append(r)
    head = "".join(f"<th>{html.escape(s)}<br>{html.escape(e)}</th>" for s, e in places)
    body = []
    for check, probe in faults:
        link = "file://" + os.path.join(root, FAULT_CHECKS[check])
        tds = []
        for system, stack in places:
            found = sorted(cells.get((check, probe, system, stack), []), key=lambda r: r["fs_kind"])
            text = "<br>".join(
                f"<span class='v-{r['verdict']}' title='{html.escape(r['reason'] or r['when'])}'>"
                f"{html.escape(r['fs_kind'] + ': ' if r['fs_kind'] else '')}{VERDICTS[r['verdict']]}</span>"
                for r in found
            )
            tds.append(f"<td>{text or '-'}</td>")
        name = f"<a href='{html.escape(link)}'>{html.escape(check)}</a> {html.escape(probe)}"
        body.append(f"<tr><th>{name}</th>{''.join(tds)}</tr>")
    return (
        "<h2>What is broken where</h2><p>The fault checks' newest verdicts (ReFrame's run reports): does "
        'each fault show in each environment, per file-system kind. "shows (known)": the environment names '
        "it as a known fault (an expected failure). Each fault links to its program.</p>"
        "<style>.v-pass{color:#060}.v-xfail{color:#a60}.v-fail,.v-hang{color:#a00;font-weight:bold}"
        ".v-error,.v-skip{color:#666}</style>"
        f"<table><tr><th>fault</th>{head}</tr>{''.join(body)}</table>"
    )
