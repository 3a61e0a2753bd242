# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The references of a performance check, taken from the partition it runs on.

A check that mixes in `ReferencesMixin` gives `reference_tables` ({kind: {variable:
(value, lower, upper)}}, kinds of references.KINDS) and `reference_unit`; after setup
its `reference` is the table of the kind the current partition names in
`extras['references']` (references.reference_for).

`add_spread` records the spread of a figure measured several times, under the names
the report reads (lib/h5stack/reframe/spreads.py): `<variable>_min`, `<variable>_max`.
"""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, variable

from h5checks.references import reference_for


class ReferencesMixin(rfm.RegressionTestPlugin):
    #: {kind: {performance variable: (value, lower, upper)}}; a kind missing: no bounds there
    reference_tables = variable(dict, value={})

    #: the unit of every value of reference_tables
    reference_unit = variable(str, value="ratio")

    @run_after("setup")
    def set_reference_of_the_partition(self):
        part = self.current_partition
        self.reference = reference_for(
            self.reference_tables,
            self.reference_unit,
            self.current_system.name,
            part.name,
            part.extras.get("references"),
        )


def add_spread(test, var, pattern, unit, least=1, most=2):
    """`<var>_min` and `<var>_max` of test: the groups least and most (numbers or names) of
    pattern in its standard output, the least and the most of the runs behind var."""
    for end, group in (("min", least), ("max", most)):
        test.perf_variables[f"{var}_{end}"] = sn.make_performance_function(
            sn.extractsingle(pattern, test.stdout, group, float), unit
        )
