# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Known faults: a fault a site accepts for now is named, with its reason, in the
programming environment's extras (`mpiio_known_faults`, `hdf5_known_faults`: {probe:
reason}); the fault checks are then expected failures (ReFrame's xfail) where it shows."""

import shlex

import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError


def known_fault_cmds(test, key):
    """The job's line that says which known fault the environment names for this probe."""
    reason = test.current_environ.extras.get(key, {}).get(test.probe)
    return [f"echo {shlex.quote(f'known-fault: {reason}')}"] if reason else []


def fault_shown(test):
    """The probe's FAULT verdicts in the job's output."""
    return sn.findall(rf"^{test.probe}: verdict: FAULT: .*$", test.stdout)


def known_and_shown(test, key):
    """An expected failure: the environment names the test's probe under extras[key], the
    test accepts known faults (accept_known, where it has one), the fault showed, and the
    rest of the sanity holds (a known fault masks nothing else)."""
    if not getattr(test, "accept_known", True) or test.probe not in test.current_environ.extras.get(key, {}):
        return False
    try:
        return sn.evaluate(sn.all(test.basic_sanity())) and bool(sn.evaluate(fault_shown(test)))
    except SanityError:
        return False
