# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack report`: the performance page from real perflogs, rendered in headless
Chromium (the plots must be drawn), and clear errors for missing or bad perflogs and
for a page that cannot be written."""

import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, h5stack
from h5stack.reframe import report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def perflogs(tmp_path_factory):
    """Perflogs of one real multifile_bench run (2 ranks) and one multifile_scale run (1 rank)
    on one stack."""
    d = tmp_path_factory.mktemp("report")
    cmd = [
        "reframe", "-C", ":" + os.path.join(ROOT, "site-configs", "config.py"), "--system", "generic", "-r",
        "-n", "multifile_bench|multifile_scale", "-p", "^mpich-hdf5-1_14$",
        "-x", "multifile_bench%ranks=4", "-x", "multifile_scale%ranks=2", "-x", "multifile_scale%ranks=4",
        "--prefix", str(d / "rfm"), "--perflogdir", str(d / "perflogs"), "--report-file", str(d / "run.json"),
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return d / "perflogs"


def test_perflog_lines_parse_into_one_record_per_variable(perflogs):
    records, problems = report.read_perflogs(str(perflogs))
    assert problems == []
    names = {r["var"] for r in records}
    assert {"posix_fpp", "hdf5_multifile", "ratio_multifile_posix_fpp", "ratio_merge_copy_serial"} <= names
    # each kernel's spread over its runs beside its median
    spread = {
        v: next(r["value"] for r in records if r["var"] == v) for v in ("posix_fpp_min", "posix_fpp", "posix_fpp_max")
    }
    assert spread["posix_fpp_min"] <= spread["posix_fpp"] <= spread["posix_fpp_max"], spread
    ratio = next(r for r in records if r["var"] == "ratio_multifile_posix_fpp")
    assert ratio["unit"] == "ratio" and ratio["ref"] == 0.8 and ratio["result"] == "pass"
    assert ratio["params"] == {"fs_kind": "posix", "ranks": "2"} and ratio["environ"] == "mpich-hdf5-1_14"
    assert ratio["system"] == "generic" and ratio["partition"] == "default" and ratio["num_tasks"] == "2"


def test_report_renders_its_plots_in_chromium(perflogs, tmp_path):
    assert CHROMIUM, "chromium is missing (requirements/debian-integration.txt)"
    page = tmp_path / "report.html"
    proc = h5stack("report", "--perflogs", str(perflogs), "--output", str(page))
    assert proc.returncode == 0, proc.stderr
    records, _ = report.read_perflogs(str(perflogs))
    nfigs = len(report.figures(records))  # bars per unit and scale, the scale curve, ratio histories
    assert nfigs >= 4 and f"({nfigs} plots," in proc.stderr
    text = page.read_text()
    # it opens with the fastest drivers, before any chart
    assert text.index("<h2>Fastest drivers</h2>") < text.index('class="plotly-graph-div')
    row = re.search(r"<td>multifile_bench</td><td>fs_kind=posix ranks=2</td><td>write</td><td>([^<]*)</td>"
                    r"<td>[^<]*</td><td>([^<]*)</td>", text)  # fmt: skip
    assert row, "no row of multifile_bench's writes"
    # a driver named only beyond the spread of the runs; the ratio with its spread
    assert row[1] in ("HDF5 MPI-IO", "HDF5 subfiling", "multifile") or row[1].startswith("within noise: "), row[1]
    assert re.fullmatch(r"[\d.]+ \([\d.]+-[\d.]+\)", row[2]), row[2]
    assert "<script src=" not in text  # self-contained: plotly.js inline, opens offline
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--virtual-time-budget=15000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180,
    ).stdout  # fmt: skip
    assert dom.count('class="plotly-graph-div') == nfigs, dom[:2000]
    assert dom.count('class="main-svg"') >= nfigs  # plotly drew each figure (JavaScript ran)
    assert len(re.findall(r'class="point"', dom)) >= 13, "no bars drawn"
    assert 'class="yerror"' in dom, "no error bars drawn (the spread of the runs)"
    assert "ratio_multifile_posix_fpp" in dom and "hdf5_multifile" in dom
    assert "multifile_scale on generic:default: seconds against records" in dom


def test_report_without_perflogs_says_so(tmp_path):
    proc = h5stack("report", "--perflogs", str(tmp_path / "none"))
    assert proc.returncode != 0
    assert f"{tmp_path / 'none'}: no such directory" in proc.stderr
    (tmp_path / "empty" / "generic" / "default").mkdir(parents=True)
    proc = h5stack("report", "--perflogs", str(tmp_path / "empty"))
    assert proc.returncode != 0
    assert "no performance values in any perflog" in proc.stderr


def test_a_malformed_line_is_reported_with_file_and_line(perflogs, tmp_path):
    bad = tmp_path / "perflogs"
    shutil.copytree(perflogs, bad)
    log = next(bad.rglob("multifile_bench.log"))
    with open(log, "a") as f:
        f.write("2026-01-01T00:00:00|generic|default|env|2|1|multifile_bench %ranks=2|only_three|1.0|MiB/s\n")
    proc = h5stack("report", "--perflogs", str(bad), "--output", str(tmp_path / "r.html"))
    assert proc.returncode == 0, proc.stderr
    n = len(log.read_text().splitlines())
    assert f"warning: {log}:{n}: 3 performance fields, not a multiple of 7" in proc.stderr


def test_the_report_is_never_written_through_a_planted_link(perflogs, tmp_path):
    """Links planted at the report's name and at the temporary name it used to write
    (report.html.tmp) are replaced or left alone, their target untouched."""
    victim = tmp_path / "victim"
    victim.write_text("precious")
    for name in ("r.html", "r.html.tmp"):
        os.symlink(victim, tmp_path / name)
    proc = h5stack("report", "--perflogs", str(perflogs), "--output", str(tmp_path / "r.html"))
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious"
    assert not (tmp_path / "r.html").is_symlink() and "<html" in (tmp_path / "r.html").read_text()
    assert oct((tmp_path / "r.html").stat().st_mode & 0o777) == oct(0o666 & ~_umask())


@pytest.mark.parametrize(
    "output, reason",
    [
        ("dir", "{tmp}/dir: a directory, not a file"),
        ("file/r.html", "{tmp}/file: not a directory"),
        ("file/sub/r.html", "{tmp}/file/sub: cannot make the directory: {tmp}/file is not one"),
    ],
)
def test_an_output_that_cannot_be_written_is_one_line_naming_it(tmp_path, output, reason):
    """A perflog of one value (no run needed); the page's path unusable: exit 1, one line."""
    log = tmp_path / "perflogs" / "generic" / "default" / "multifile_bench.log"
    log.parent.mkdir(parents=True)
    log.write_text(
        "2026-01-01T00:00:00|generic|default|env|2|1|multifile_bench %ranks=2|posix_fpp|1.0|MiB/s|0|null|null|pass\n"
    )
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("")
    proc = h5stack("report", "--perflogs", str(tmp_path / "perflogs"), "--output", str(tmp_path / output))
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert proc.stderr.splitlines() == [f"h5stack: error: {reason.format(tmp=tmp_path)}"], proc.stderr
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == [] and (tmp_path / "file").read_text() == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "file", "perflogs"]


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask
