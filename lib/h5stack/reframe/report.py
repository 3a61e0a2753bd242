# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`h5stack report`: an HTML page with plots from ReFrame's perflogs.

Reads every `<perflogs>/<system>/<partition>/<check>.log` (the layout of perflog.py,
which the site configs' logging writes), and writes one self-contained page (plotly.js inline, so it opens
offline). It opens with what a reader comes for: per system, which driver writes and
reads fastest and by what ratio to the limit measured in the same run (summary.py).
Then, for each check and system:partition, the latest value of every performance
variable per programming environment and parameter set: one chart per unit and scale
(variables whose values lie more than a factor SCALE_SPAN apart go to separate charts,
axes are logarithmic where a chart's values still span more than a decade), with the
references and, for checks that measure in rounds, the spread of the rounds as error
bars (spreads.py); the scale curves of multifile_scale (seconds against records, log-log);
the ratios of checks measured per file-system layout, layouts side by side (report_layouts.py);
the history of every ratio; and a table of the latest values with reference, bounds
and result. Beside the opening: what is broken where, the fault checks' newest verdicts
from ReFrame's run reports (faults.py). `./h5stack run` writes it after each run;
`./h5stack report` rebuilds it.
"""

import html
import os
import re
import time
from collections import defaultdict

from h5stack.base import paths
from h5stack.base.ui import StepError, info
from h5stack.reframe import faults, spreads
from h5stack.reframe.environs import stacks_by_environ
from h5stack.reframe.perflog import PERFVAR, PREFIX, split_display_name
from h5stack.reframe.report_layouts import layout_figures
from h5stack.reframe.report_summary import summary_html
from h5stack.stacks.plan import Stacks

SCALE_SPAN = 30  # variables further apart than this factor are not drawn on one chart
CURVE = re.compile(r"^seconds_(?P<op>\w+?)_at_(?P<n>\d+)$")  # multifile_scale's curve


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def parse_line(line):
    """Records (one per performance variable) of one perflog line; [] for lines without any."""
    fields = line.rstrip("\n").split("|")
    if len(fields) < len(PREFIX) or fields[0] == "job_completion_time":
        return []
    head = dict(zip(PREFIX, fields[: len(PREFIX)]))
    rest = [f for f in fields[len(PREFIX) :] if f != ""]
    if not rest or rest == ["null"]:
        return []  # a check without performance variables
    if len(rest) % len(PERFVAR):
        raise ValueError(f"{len(rest)} performance fields, not a multiple of {len(PERFVAR)}")
    head["check"], head["params"] = split_display_name(head["display_name"])
    records = []
    for i in range(0, len(rest), len(PERFVAR)):
        rec = dict(head, **dict(zip(PERFVAR, rest[i : i + len(PERFVAR)])))
        rec["value"] = _number(rec["value"])
        for key in ("ref", "lower", "upper"):
            rec[key] = _number(rec[key])
        if rec["value"] is not None:
            records.append(rec)
    return records


def read_perflogs(root):
    """All records under root; malformed lines are reported (file:line: reason) and skipped."""
    records, problems = [], []
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".log"):
                continue  # ReFrame keeps perflogs of an older format as <check>.log.h<N>
            path = os.path.join(dirpath, name)
            with open(path, errors="replace") as f:
                for number, line in enumerate(f, 1):
                    try:
                        records += parse_line(line)
                    except ValueError as e:
                        problems.append(f"{path}:{number}: {e}")
    return records, problems


def _params_label(params):
    return " ".join(f"{k}={v}" for k, v in sorted(params.items())) or "-"


def latest(records):
    """The newest record per (check, system, partition, environ, params, var)."""
    newest = {}
    for rec in records:
        key = (rec["check"], rec["system"], rec["partition"], rec["environ"], _params_label(rec["params"]), rec["var"])
        if key not in newest or rec["time"] >= newest[key]["time"]:
            newest[key] = rec
    return list(newest.values())


def scale_groups(values):
    """Variables ({name: largest value}) in groups of one scale: sorted by value, a group
    ends where the next value is more than SCALE_SPAN times its smallest."""
    groups, start = [], None
    for name, value in sorted(values.items(), key=lambda kv: kv[1]):
        if groups and start > 0 and value <= start * SCALE_SPAN:
            groups[-1].append(name)
        else:
            groups.append([name])
            start = value
    return groups


def _error_bars(values, by_var, names, spread):
    """The error bars of one trace: each bar's spread of the rounds (spreads.error_y)."""
    return spreads.error_y(values, [spread.get(spreads.key(by_var[v])) if v in by_var else None for v in names])


def _bar_figure(title, unit, recs, variables, spread=None):
    """Bars of the given variables, one row per parameter set, one colour per environment;
    spread: {spreads.key: (least, most)}, drawn as error bars."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    recs = [r for r in recs if r["var"] in variables]
    param_sets = sorted({_params_label(r["params"]) for r in recs})
    fig = make_subplots(rows=len(param_sets), cols=1, subplot_titles=param_sets, shared_xaxes=False)
    shown = set()
    positive = [r["value"] for r in recs if r["value"] > 0]
    log = unit == "ratio" or (positive and max(positive) > 10 * min(positive))
    for row, pset in enumerate(param_sets, 1):
        mine = [r for r in recs if _params_label(r["params"]) == pset]
        names = sorted({r["var"] for r in mine})
        for environ in sorted({r["environ"] for r in mine}):
            by_var = {r["var"]: r for r in mine if r["environ"] == environ}
            values = [by_var[v]["value"] if v in by_var else None for v in names]
            fig.add_trace(
                go.Bar(name=environ, legendgroup=environ, showlegend=environ not in shown, x=names, y=values,
                       error_y=_error_bars(values, by_var, names, spread or {}),
                       hovertext=[by_var[v]["time"] if v in by_var else "" for v in names]),
                row=row, col=1,
            )  # fmt: skip
            shown.add(environ)
        refs = [(v, next((r["ref"] for r in mine if r["var"] == v and r["ref"]), None)) for v in names]
        refs = [(v, ref) for v, ref in refs if ref]
        if refs:
            fig.add_trace(
                go.Scatter(name="reference", legendgroup="reference", showlegend="reference" not in shown,
                           x=[v for v, _ in refs], y=[ref for _, ref in refs], mode="markers",
                           marker={"symbol": "line-ew-open", "size": 24, "color": "black"}),
                row=row, col=1,
            )  # fmt: skip
            shown.add("reference")
        fig.update_yaxes(title_text=unit, type="log" if log else None, row=row, col=1)
    fig.update_layout(barmode="group", height=320 * len(param_sets) + 80, title=title)
    return fig


def _curve_figure(check, where, recs):
    """multifile_scale: seconds against records per operation, log-log."""
    import plotly.graph_objects as go

    fig = go.Figure()
    series = defaultdict(list)
    for r in recs:
        m = CURVE.match(r["var"])
        series[(m["op"], r["environ"], _params_label(r["params"]))].append((int(m["n"]), r["value"]))
    for (op, environ, pset), points in sorted(series.items()):
        points.sort()
        fig.add_trace(go.Scatter(name=f"{op} {environ} {pset}", x=[n for n, _ in points],
                                 y=[v for _, v in points], mode="lines+markers"))  # fmt: skip
    fig.update_layout(title=f"{check} on {where}: seconds against records", xaxis_title="records",
                      yaxis_title="s", xaxis_type="log", yaxis_type="log", height=520)  # fmt: skip
    return fig


def figures(records):
    """[(title, plotly figure)]: latest values per check/system/unit/scale, the scale
    curves, then ratio histories."""
    import plotly.graph_objects as go

    out = []
    groups, curves = defaultdict(list), defaultdict(list)
    values, spread = spreads.split(latest(records))
    for rec in values:
        where = f"{rec['system']}:{rec['partition']}"
        if CURVE.match(rec["var"]):
            curves[(rec["check"], where)].append(rec)
        else:
            groups[(rec["check"], where, rec["unit"])].append(rec)
    for (check, where, unit), recs in sorted(groups.items()):
        largest = defaultdict(float)
        for r in recs:
            largest[r["var"]] = max(largest[r["var"]], abs(r["value"]))
        parts = [list(largest)] if unit == "ratio" else scale_groups(largest)  # ratios: one log axis
        for i, variables in enumerate(parts, 1):
            label = unit if len(parts) == 1 else f"{unit}, scale {i} of {len(parts)}"
            out.append((f"{check} on {where}: {label}",
                        _bar_figure(f"{check} on {where} ({label})", unit, recs, set(variables), spread)))  # fmt: skip
    for (check, where), recs in sorted(curves.items()):
        out.append((f"{check} on {where}: scale curve", _curve_figure(check, where, recs)))
    out += layout_figures(values, spread)
    history = defaultdict(list)
    for rec in spreads.split(records)[0]:
        if rec["unit"] == "ratio":
            history[(rec["check"], f"{rec['system']}:{rec['partition']}")].append(rec)
    for (check, where), recs in sorted(history.items()):
        fig = go.Figure()
        for series in sorted({(r["environ"], _params_label(r["params"]), r["var"]) for r in recs}):
            points = sorted((r for r in recs if (r["environ"], _params_label(r["params"]), r["var"]) == series),
                            key=lambda r: r["time"])  # fmt: skip
            fig.add_trace(
                go.Scatter(
                    name=" ".join(series),
                    x=[r["time"] for r in points],
                    y=[r["value"] for r in points],
                    mode="lines+markers",
                )
            )
        fig.update_layout(
            title=f"{check} on {where}: ratios over time", yaxis_title="ratio", yaxis_type="log", height=480
        )
        out.append((f"{check} on {where}: ratio history", fig))
    return out


def _table(records):
    rows = []
    values, spread = spreads.split(latest(records))
    for r in sorted(values, key=lambda r: (r["check"], r["system"], r["environ"], str(r["params"]), r["var"])):
        bounds = ""
        if r["ref"]:
            lo = f"{r['ref'] * (1 + r['lower']):.4g}" if r["lower"] is not None else "-"
            hi = f"{r['ref'] * (1 + r['upper']):.4g}" if r["upper"] is not None else "-"
            bounds = f"{r['ref']:.4g} [{lo}, {hi}]"
        cells = [r["check"], f"{r['system']}:{r['partition']}", r["environ"], _params_label(r["params"]), r["var"],
                 _value_text(r, spread.get(spreads.key(r))), bounds, r["result"], r["time"]]  # fmt: skip
        css = "" if r["result"] in ("pass", "null") else ' class="fail"'
        rows.append(f"<tr{css}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "check",
            "system",
            "environment",
            "parameters",
            "variable",
            "value (spread of the rounds)",
            "reference [bounds]",
            "result",
            "time",
        )
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _value_text(rec, ends):
    """A value with its unit, and the spread of its rounds where recorded."""
    text = f"{rec['value']:.4g} {rec['unit']}"
    return text + (f" ({ends[0]:.4g}-{ends[1]:.4g})" if ends else "")


def render(records, problems, source, fault_rows=()):
    from plotly.offline import get_plotlyjs

    figs = figures(records)
    systems = sorted({f"{r['system']}:{r['partition']}" for r in records})
    times = sorted(r["time"] for r in records)
    parts = [
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>h5stack performance report</title>",
        f"<script type='text/javascript'>{get_plotlyjs()}</script>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:90%}"
        "td,th{border:1px solid #ccc;padding:2px 6px}tr.fail{background:#fdd}.problems{color:#a00}</style>",
        "</head><body>",
        "<h1>h5stack performance report</h1>",
        f"<p>{len(records)} values from the perflogs in <code>{html.escape(source)}</code>; systems: "
        f"{html.escape(', '.join(systems))}; runs from {html.escape(times[0])} to {html.escape(times[-1])}; "
        f"written {time.strftime('%Y-%m-%dT%H:%M:%S')}. Figures of one run compare with each other; "
        "ratios are against the limit measured in the same run.</p>",
    ]
    if problems:
        parts.append(
            "<div class='problems'><p>Lines that could not be read:</p><ul>"
            + "".join(f"<li>{html.escape(p)}</li>" for p in problems[:50])
            + "</ul></div>"
        )
    parts.append(summary_html(latest(records)))
    parts.append(faults.table_html(fault_rows))
    for title, fig in figs:
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=False))
    parts += ["<h2>Latest values</h2>", _table(records), "</body></html>"]
    return "\n".join(parts), len(figs)


def write_report(perflogs=None, output=None, reports=None):
    """Write the page (the fault table from the run reports in reports, by default
    $H5STACK_HOME/reports); return (path, number of figures, number of values)."""
    perflogs = perflogs or paths.sub("perflogs")
    output = output or os.path.join(paths.sub("reports"), "report.html")
    if not os.path.isdir(perflogs):
        raise StepError(f"{perflogs}: no such directory (run `./h5stack run` first, or give --perflogs)")
    records, problems = read_perflogs(perflogs)
    for p in problems:
        info(f"warning: {p}")
    if not records:
        raise StepError(f"{perflogs}: no performance values in any perflog (run the performance checks first)")
    stacks = stacks_by_environ(Stacks().names())  # columns named by stack, as `./h5stack run` names them
    page, nfigs = render(records, problems, perflogs, faults.latest_rows(reports, stacks))
    # a private temporary file renamed into place: never written through a link, and
    # a path that cannot take the page is named with the reason (StepError)
    paths.replace_file(output, page)
    return output, nfigs, len(records)


def run(perflogs=None, output=None):
    """Write the report of the perflogs in perflogs to output (defaults: under $H5STACK_HOME)."""
    path, nfigs, nvalues = write_report(perflogs, output)
    info(f"report: {path} ({nfigs} plots, {nvalues} values)")
    print(path)
    return 0
