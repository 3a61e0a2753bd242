# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The spread of a performance variable measured in rounds: the checks that run their
kernels several times record the median as `<var>` and the least and the most of the
rounds as `<var>_min` and `<var>_max` (h5pwrite3dc_bench, multifile_bench). The report
draws them as error bars and judges "within noise" by them (report_summary.py)."""

import re

SPREAD = re.compile(r"^(?P<var>\w+)_(?P<end>min|max)$")


def key(rec, var=None):
    """What identifies a variable of one run of a check: check, where, environment,
    parameters, name."""
    params = " ".join(f"{k}={v}" for k, v in sorted(rec["params"].items()))
    return (rec["check"], rec["system"], rec["partition"], rec["environ"], params, var or rec["var"])


def split(records):
    """(values, spreads): the records but the spreads of other variables, and {key of a
    variable: (least, most)} for those whose `_min` and `_max` are both there. A name
    that ends in _min or _max without its base variable beside it stays a value."""
    names = {key(r) for r in records}
    ends, values = {}, []
    for r in records:
        m = SPREAD.match(r["var"])
        if m and key(r, m["var"]) in names:
            ends.setdefault(key(r, m["var"]), {})[m["end"]] = r["value"]
        else:
            values.append(r)
    spreads = {k: (e["min"], e["max"]) for k, e in ends.items() if len(e) == 2}
    return values, spreads
