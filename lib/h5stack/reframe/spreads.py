# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The spread of a performance variable measured in rounds: the checks that run their
kernels several times record the figure as `<var>` (a median; IOR's checks: IOR's mean)
and the least and the most of the rounds as `<var>_min` and `<var>_max`
(reframe-tests/lib/h5checks/performance.py, add_spread). The report draws them as error
bars and judges "within noise" by them (report_summary.py)."""

import re

SPREAD = re.compile(r"^(?P<var>\w+)_(?P<end>min|max)$")


def key(rec, var=None):
    """What identifies a variable of one run of a check: check, where, environment,
    parameters, the run's time (a median and its spread come from one run), name."""
    params = " ".join(f"{k}={v}" for k, v in sorted(rec["params"].items()))
    return (rec["check"], rec["system"], rec["partition"], rec["environ"], params, rec["time"], var or rec["var"])


def split(records):
    """(values, spreads): the records but the spreads of other variables, and {key of a
    variable: (least, most)} for those whose `_min` and `_max` both come from its run. A
    spread whose variable is there from another run only is left out; a name that ends in
    _min or _max with no such variable at all stays a value."""
    names = {key(r) for r in records}
    any_run = {k[:5] + k[6:] for k in names}
    ends, values = {}, []
    for r in records:
        m = SPREAD.match(r["var"])
        if not m or key(r, m["var"])[:5] + (m["var"],) not in any_run:
            values.append(r)
        elif key(r, m["var"]) in names:
            ends.setdefault(key(r, m["var"]), {})[m["end"]] = r["value"]
    spreads = {k: (e["min"], e["max"]) for k, e in ends.items() if len(e) == 2}
    return values, spreads


def error_y(values, ends):
    """plotly's error_y of one trace: from each value down to the least and up to the
    most of its rounds (ends: (least, most) or None per value); None without any spread."""
    if not any(ends):
        return None
    return {
        "type": "data", "symmetric": False,
        "array": [e[1] - y if e else 0 for e, y in zip(ends, values)],
        "arrayminus": [y - e[0] if e else 0 for e, y in zip(ends, values)],
    }  # fmt: skip
