# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack report`'s grouping of values into charts (no run needed; the page from real
perflogs is tests/integration/test_report.py)."""

import pytest

from h5stack.reframe import report, report_layouts, report_summary, spreads


def test_charts_put_together_only_values_of_one_scale():
    groups = report.scale_groups({"rate_create": 600000.0, "rate_write": 1000.0, "limit": 1500.0, "tiny": 2.0})
    assert groups == [["tiny"], ["rate_write", "limit"], ["rate_create"]]
    assert report.scale_groups({}) == []


def _rec(var, value, driver=None, unit="MB/s"):
    params = {"fs_kind": "posix", **({"driver": driver} if driver else {})}
    return {"check": "h5pwrite3dc_bench", "system": "generic", "partition": "default", "environ": "mpich-hdf5-1_14",
            "params": params, "var": var, "value": value, "unit": unit, "time": "2026-11-27T12:00:00"}  # fmt: skip


def _run(driver, rate, least, most, limit=1000.0):
    """One h5pwrite3dc_bench job of a driver: its rate with the spread of the rounds, its limit."""
    return [_rec("rate_write", rate, driver), _rec("rate_write_min", least, driver),
            _rec("rate_write_max", most, driver), _rec("rate_write_posix_fpp", limit, driver)]  # fmt: skip


def test_spreads_are_taken_apart_from_the_values_they_belong_to():
    recs = _run("mpio", 500.0, 400.0, 600.0) + [_rec("open_max", 3.0, "mpio")]  # a name, not a spread
    values, spread = spreads.split(recs)
    assert sorted(r["var"] for r in values) == ["open_max", "rate_write", "rate_write_posix_fpp"]
    assert spread == {spreads.key(recs[0]): (400.0, 600.0)}


@pytest.mark.parametrize(
    "multifile, verdict",
    [
        ((700.0, 650.0, 750.0), "multifile"),  # its least above MPI-IO's most
        ((700.0, 550.0, 750.0), "within noise: multifile, mpio"),  # the rounds overlap
        ((300.0, 250.0, 350.0), "mpio"),
    ],
)
def test_the_fastest_driver_is_named_only_beyond_the_noise(multifile, verdict):
    rows = report_summary._rows(_run("mpio", 500.0, 400.0, 600.0) + _run("multifile", *multifile))
    assert [r[5] for r in rows] == [verdict], rows
    best = max(500.0, multifile[0])
    assert rows[0][8].startswith(f"{best / 1000:.3f} ("), rows[0][8]  # the ratio and its spread


def test_a_run_without_spreads_says_so():
    recs = [r for r in _run("mpio", 500.0, 0, 0) + _run("multifile", 700.0, 0, 0) if "_m" not in r["var"]]
    assert [r[5] for r in report_summary._rows(recs)] == ["multifile (spread not measured)"]


def test_error_bars_reach_from_the_median_to_the_least_and_the_most():
    recs = _run("mpio", 500.0, 400.0, 650.0)
    values, spread = spreads.split(recs)
    by_var = {r["var"]: r for r in values}
    bars = report._error_bars([500.0, 1000.0], by_var, ["rate_write", "rate_write_posix_fpp"], spread)
    assert bars["array"] == [150.0, 0] and bars["arrayminus"] == [100.0, 0]


def test_a_spread_of_another_run_is_not_attached_to_a_median():
    """The newest median has no spread (a run of one round) and an older run's spread is
    still the newest of its name: it is not drawn around the new median."""
    old = [dict(r, time="2026-11-26T12:00:00") for r in _run("mpio", 500.0, 400.0, 600.0)]
    new = [r for r in _run("mpio", 900.0, 0, 0) if not r["var"].endswith(("_min", "_max"))]
    values, spread = spreads.split(report.latest(old + new))
    assert spread == {} and {r["var"] for r in values} == {"rate_write", "rate_write_posix_fpp"}


def _layout_rec(layout, driver, var, value):
    return {"check": "h5pwrite3dc_layouts", "system": "slurm-cluster", "partition": "cluster",
            "environ": "openmpi-hdf5-1_14", "params": {"fs_kind": "cephfs", "driver": driver, "layout": layout},
            "var": var, "value": value, "unit": "ratio", "time": f"2026-11-27T12:00:0{len(layout)}"}  # fmt: skip


def test_a_check_per_layout_gets_a_chart_with_the_layouts_side_by_side():
    recs = []
    for layout in ("1Mx2", "4Mx1"):
        for driver, ratio in (("mpio", 0.4), ("multifile", 0.9)):  # a median, its least and its most
            recs += [_layout_rec(layout, driver, "ratio_write_posix_fpp", ratio),
                     _layout_rec(layout, driver, "ratio_write_posix_fpp_min", ratio - 0.1),
                     _layout_rec(layout, driver, "ratio_write_posix_fpp_max", ratio + 0.2)]  # fmt: skip
    recs.append(_layout_rec("4Mx1", "mpio", "rate_write", 50.0) | {"unit": "MB/s"})  # no ratio: no chart
    values, spread = spreads.split(recs)
    (title, fig), *more = report_layouts.layout_figures(values, spread)
    assert not more and title == "h5pwrite3dc_layouts on slurm-cluster:cluster: ratio_write_posix_fpp per layout"
    bars = {t.name: t for t in fig.data}
    assert sorted(bars) == ["driver=mpio openmpi-hdf5-1_14", "driver=multifile openmpi-hdf5-1_14"]
    multifile = bars["driver=multifile openmpi-hdf5-1_14"]
    assert list(multifile.x) == ["1Mx2", "4Mx1"] and list(multifile.y) == [0.9, 0.9]
    assert list(multifile.error_y.array) == pytest.approx([0.2, 0.2])
    assert list(multifile.error_y.arrayminus) == pytest.approx([0.1, 0.1])


def test_the_summary_ranks_the_drivers_of_each_layout_apart():
    recs = []
    for layout, multifile in (("1Mx2", 900.0), ("4Mx1", 300.0)):
        for driver, rate in (("mpio", 500.0), ("multifile", multifile)):
            recs += [_layout_rec(layout, driver, var, value) | {"unit": "MB/s"} for var, value in
                     (("rate_write", rate), ("rate_write_min", rate - 50), ("rate_write_max", rate + 50),
                      ("rate_write_posix_fpp", 1000.0))]  # fmt: skip
    rows = report_summary._rows(recs)
    assert [(r[3], r[5]) for r in rows] == [("fs_kind=cephfs layout=1Mx2", "multifile"),
                                            ("fs_kind=cephfs layout=4Mx1", "mpio")], rows  # fmt: skip


def test_layouts_are_drawn_from_the_finest_stripe_unit_up():
    names = ["4Mx1", "1Mx2", "256Kx4", "1Mx4", "default"]
    assert sorted(names, key=report_layouts.layout_order) == ["256Kx4", "1Mx2", "1Mx4", "4Mx1", "default"]
