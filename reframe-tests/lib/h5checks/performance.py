# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The references of a performance check, taken from the partition it runs on.

A check that mixes in `ReferencesMixin` gives `reference_tables` ({kind: {variable:
(value, lower, upper)}}, kinds of references.KINDS) and `reference_unit`; after setup
its `reference` is the table of the kind the current partition names in
`extras['references']` (references.reference_for).
"""

import reframe as rfm
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
