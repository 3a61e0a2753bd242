# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The reference tables of the performance checks, and which one a partition takes.

A partition names its table in its extras (`extras['references']`, one of KINDS,
checked by site-configs/schema.py); no system or partition is named here or in the
checks. `local`: this machine's systems (`generic`, `slurm-local`, the emulated
`slurm-cluster`: 2 shared cores, the page cache), where the bounds only catch a
collapse. `cluster`: the cluster templates, where the values are placeholders for the
site to calibrate. A check's table maps a performance variable to (value, lower, upper),
the bounds as fractions of the value (None: no bound); `ReferencesMixin`
(performance.py) sets ReFrame's `reference` from it for the partition the check runs
on. No ReFrame here, so the site configs can import it.
"""

#: the reference tables a partition can take (extras['references'])
KINDS = ("local", "cluster")


def reference_for(tables, unit, system, partition, kind):
    """ReFrame's `reference` for one partition: its kind's table of `tables` ({kind:
    {variable: (value, lower, upper)}}) in `unit`, keyed `system:partition`; {} for a
    partition that names no kind (its values are recorded only)."""
    if kind is None:
        return {}
    if kind not in KINDS:
        raise ValueError(f"{system}:{partition}: extras['references'] is {kind!r}, not one of {', '.join(KINDS)}")
    return {f"{system}:{partition}": {k: (*v, unit) for k, v in (tables.get(kind) or {}).items()}}
