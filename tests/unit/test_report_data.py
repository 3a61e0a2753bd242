# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack report`'s grouping of values into charts (no run needed; the page from real
perflogs is tests/integration/test_report.py)."""

from h5stack.reframe import report


def test_charts_put_together_only_values_of_one_scale():
    groups = report.scale_groups({"rate_create": 600000.0, "rate_write": 1000.0, "limit": 1500.0, "tiny": 2.0})
    assert groups == [["tiny"], ["rate_write", "limit"], ["rate_create"]]
    assert report.scale_groups({}) == []
