# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The opening of the performance report: per system, which driver writes and reads
fastest, and by what ratio to the limit measured in the same run.

Only benchmarks that time several drivers against a limit in one run count (figures of
different runs do not compare): each entry of BENCHMARKS names a check, its limit
variable and the variables of the drivers it times, all in one unit.
"""

import html
from collections import defaultdict

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


def _label(params):
    return " ".join(f"{k}={v}" for k, v in sorted(params.items()) if k != "driver") or "-"


def _rows(records):
    """(system, environ, check, params, kind, best driver, its value, unit, ratio, limit text, others).

    A check run once per driver (parameter `driver`, as h5pwrite3dc_bench) measures its
    limit in each run: every driver is compared with its own run's limit, and the
    drivers are ranked by that ratio."""
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
            found = []
            for name, rec in byvar.items():
                var, _, driver = name.partition("/")
                limit = byvar.get(f"{limit_var}/{driver}" if driver else limit_var)
                if var in drivers and limit and limit["value"]:
                    found.append((rec["value"] / limit["value"], driver or drivers[var], rec))
            if not found:
                continue
            found.sort(key=lambda f: -f[0])
            ratio, driver, rec = found[0]
            others = ", ".join(f"{d} {q:.2f}" for q, d, _ in found[1:])
            rows.append((system, environ, check, params, kind, driver, rec["value"], rec["unit"], ratio,
                         limit_text, others))  # fmt: skip
    return rows


def summary_html(records):
    """The summary table (HTML) from the latest records; a sentence when none applies."""
    rows = _rows(records)
    if not rows:
        return "<h2>Fastest drivers</h2><p>No benchmark that times drivers against a limit has run yet.</p>"
    head = ("system", "environment", "benchmark", "parameters", "", "fastest driver", "rate", "ratio to limit",
            "limit", "other drivers (ratio to limit)")  # fmt: skip
    body = []
    for system, environ, check, params, kind, driver, value, unit, ratio, limit, others in rows:
        cells = [system, environ, check, params, kind, driver, f"{value:.4g} {unit}", f"{ratio:.3f}", limit, others]
        body.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return (
        "<h2>Fastest drivers</h2><p>Per system and benchmark run: the driver that wrote (read) fastest and its "
        "ratio to the limit measured in the same run.</p><table><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )
