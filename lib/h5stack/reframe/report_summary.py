# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The opening of the performance report: per system, which driver writes and reads
fastest, and by what ratio to the limit measured in the same run.

Only benchmarks that time several drivers against a limit in one run count (figures of
different runs do not compare): each entry of BENCHMARKS names a check, its limit
variable and the variables of the drivers it times, all in one unit. A driver's ratio is
its median over the limit's median; its spread, the least and the most of its own runs
over that same limit median (spreads.py). A driver is named the fastest only when its
least is above every other driver's most; otherwise the row says "within noise" and
names the drivers it cannot tell apart.
"""

import html
from collections import defaultdict

from h5stack.reframe import spreads

#: check -> (what is measured, limit variable and its meaning, {driver variable: driver})
BENCHMARKS = {
    "multifile_bench": [
        ("write", ("posix_fpp", "raw pwrite, file per process"),
         {"hdf5_mpio": "HDF5 MPI-IO", "hdf5_subfiling": "HDF5 subfiling", "hdf5_multifile": "multifile"}),
        ("read", ("read_merged", "HDF5 reading the ordinary (merged) file"),
         {"read_merged": "ordinary file", "read_inplace": "multifile, in place"}),
    ],
    "h5pwrite3dc_bench": [
        ("write", ("rate_write_posix_fpp", "raw pwrite, file per process"), {"rate_write": "(its parameter)"}),
    ],
}  # fmt: skip
BENCHMARKS["h5pwrite3dc_layouts"] = BENCHMARKS["h5pwrite3dc_bench"]  # a row per layout


def _label(params):
    return " ".join(f"{k}={v}" for k, v in sorted(params.items()) if k != "driver") or "-"


def _found(byvar, spread, limit_var, drivers):
    """[(ratio, least, most, driver, record)] of the drivers of one run, fastest first;
    least and most are None where the spread was not recorded."""
    found = []
    for name, rec in byvar.items():
        var, _, driver = name.partition("/")
        limit = byvar.get(f"{limit_var}/{driver}" if driver else limit_var)
        if var in drivers and limit and limit["value"]:
            least, most = spread.get(spreads.key(rec), (None, None))
            lo, hi = (least / limit["value"], most / limit["value"]) if least is not None else (None, None)
            found.append((rec["value"] / limit["value"], lo, hi, driver or drivers[var], rec))
    return sorted(found, key=lambda f: -f[0])


def _verdict(found):
    """The fastest driver's name, or "within noise: ..." with the drivers whose spread
    reaches its own, or the name with "(spread not measured)"."""
    best = found[0]
    if len(found) == 1:
        return best[3]
    if any(f[1] is None for f in found):
        return f"{best[3]} (spread not measured)"
    close = [f[3] for f in found[1:] if f[2] >= best[1]]
    return f"within noise: {', '.join([best[3], *close])}" if close else best[3]


def _ratio_text(f, digits):
    ratio, lo, hi = f[:3]
    return f"{ratio:.{digits}f}" + (f" ({lo:.{digits}f}-{hi:.{digits}f})" if lo is not None else "")


def _rows(records):
    """(system, environ, check, params, kind, verdict, best's value, unit, ratio text, limit text, others).

    A check run once per driver (parameter `driver`, as h5pwrite3dc_bench) measures its
    limit in each run: every driver is compared with its own run's limit, and the
    drivers are ranked by that ratio."""
    records, spread = spreads.split(records)
    runs = defaultdict(dict)  # (system, environ, check, params but driver) -> {var[/driver]: record}
    for r in records:
        if r["check"] not in BENCHMARKS:
            continue
        key = (f"{r['system']}:{r['partition']}", r["environ"], r["check"], _label(r["params"]))
        driver = r["params"].get("driver")
        runs[key][f"{r['var']}/{driver}" if driver else r["var"]] = r
    rows = []
    for (system, environ, check, params), byvar in sorted(runs.items()):
        for kind, (limit_var, limit_text), drivers in BENCHMARKS[check]:
            found = _found(byvar, spread, limit_var, drivers)
            if not found:
                continue
            rec = found[0][4]
            others = ", ".join(f"{f[3]} {_ratio_text(f, 2)}" for f in found[1:])
            rows.append((system, environ, check, params, kind, _verdict(found), rec["value"], rec["unit"],
                         _ratio_text(found[0], 3), limit_text, others))  # fmt: skip
    return rows


def summary_html(records):
    """The summary table (HTML) from the latest records; a sentence when none applies."""
    rows = _rows(records)
    if not rows:
        return "<h2>Fastest drivers</h2><p>No benchmark that times drivers against a limit has run yet.</p>"
    head = ("system", "environment", "benchmark", "parameters", "", "fastest driver", "rate",
            "ratio to limit (spread)", "limit", "other drivers (ratio to limit)")  # fmt: skip
    body = []
    for system, environ, check, params, kind, driver, value, unit, ratio, limit, others in rows:
        cells = [system, environ, check, params, kind, driver, f"{value:.4g} {unit}", ratio, limit, others]
        body.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return (
        "<h2>Fastest drivers</h2><p>Per system and benchmark run: the driver that wrote (read) fastest and its "
        "ratio to the limit measured in the same run: its median over the limit's median, in brackets its least "
        'and its most over that same median. Where those spreads overlap, no driver is named: "within noise" '
        "lists those that one run cannot tell apart.</p><table><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )
