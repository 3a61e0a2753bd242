# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The report's charts of a check measured per file-system layout (a `layout` parameter,
as h5pwrite3dc_layouts on CephFS): for each ratio, the layouts side by side on the x axis
and one bar per driver and environment, with the spread of the rounds as error bars, so
that one chart answers "which way of writing, on which striping"."""

import re
from collections import defaultdict

from h5stack.reframe import spreads

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def layout_order(name):
    """Sort key of a layout's name: by stripe unit, then count ("256Kx4" before "1Mx2");
    names of another form after those, by name."""
    m = re.fullmatch(r"(\d+)([KMG]?)x(\d+)", name)
    return (0, int(m[1]) * UNITS[m[2]], int(m[3]), name) if m else (1, 0, 0, name)


def _label(params, leave_out):
    return " ".join(f"{k}={v}" for k, v in sorted(params.items()) if k not in leave_out)


def _bars(recs, layouts, spread):
    """[(name, y values, error_y)] of one chart: a series per driver (and the other
    parameters) and environment, a value per layout."""
    series = defaultdict(dict)
    for r in recs:
        series[(_label(r["params"], ("layout", "fs_kind")), r["environ"])][r["params"]["layout"]] = r
    out = []
    for (label, environ), by_layout in sorted(series.items()):
        values = [by_layout[lay]["value"] if lay in by_layout else None for lay in layouts]
        ends = [spread.get(spreads.key(by_layout[lay])) if lay in by_layout else None for lay in layouts]
        out.append((f"{label} {environ}".strip(), values, spreads.error_y(values, ends)))
    return out


def layout_figures(values, spread):
    """[(title, plotly figure)]: a chart per check, system:partition and ratio of the
    records (latest values, spreads.split) that carry a `layout` parameter."""
    import plotly.graph_objects as go

    groups = defaultdict(list)
    for r in values:
        if "layout" in r["params"] and r["unit"] == "ratio":
            groups[(r["check"], f"{r['system']}:{r['partition']}", r["var"])].append(r)
    out = []
    for (check, where, var), recs in sorted(groups.items()):
        layouts = sorted({r["params"]["layout"] for r in recs}, key=layout_order)
        fig = go.Figure()
        for name, ys, error in _bars(recs, layouts, spread):
            fig.add_trace(go.Bar(name=name, x=layouts, y=ys, error_y=error))
        title = f"{check} on {where}: {var} per layout"
        fig.update_layout(barmode="group", title=title, xaxis_title="layout", yaxis_title="ratio", height=480)
        out.append((title, fig))
    return out
