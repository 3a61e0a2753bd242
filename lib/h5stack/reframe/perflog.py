# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The layout of h5stack's perflog lines: one source for the ReFrame logging
configuration that writes them (site-configs/common.py) and the report that reads
them (report.py). One line per test: the FIELDS, then the PERFVAR_FIELDS of each
performance variable, all separated by '|'."""

#: (name in h5stack's records, ReFrame's log attribute)
FIELDS = [
    ("time", "check_job_completion_time"),
    ("system", "check_system"),
    ("partition", "check_partition"),
    ("environ", "check_environ"),
    ("num_tasks", "check_num_tasks"),
    ("jobid", "check_jobid"),
    ("display_name", "check_display_name"),
]
PERFVAR_FIELDS = [
    ("var", "check_perf_var"),
    ("value", "check_perf_value"),
    ("unit", "check_perf_unit"),
    ("ref", "check_perf_ref"),
    ("lower", "check_perf_lower_thres"),
    ("upper", "check_perf_upper_thres"),
    ("result", "check_perf_result"),
]
PREFIX = [name for name, _ in FIELDS]
PERFVAR = [name for name, _ in PERFVAR_FIELDS]


def reframe_format():
    """ReFrame's filelog handler settings (format, format_perfvars) for this layout."""
    line = "|".join(f"%({attr})s" for _, attr in FIELDS) + "|%(check_perfvalues)s"
    perfvar = "|".join(f"%({attr})s" for _, attr in PERFVAR_FIELDS) + "|"  # ReFrame drops the last character
    return {"format": line, "format_perfvars": perfvar}


def split_display_name(name):
    """(check, {parameter: value}) of a ReFrame display name ("check %a=1 %b=x")."""
    check, *words = name.split(" ")
    return check, dict(w[1:].split("=", 1) for w in words if w.startswith("%") and "=" in w)
