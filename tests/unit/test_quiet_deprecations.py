# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""site-configs/quiet_deprecations.py: a suppressed ReFrame deprecation warning skips
ReFrame's walk of the stack; one that is wanted is still given, at the caller's line."""

import os
import subprocess
import sys
import textwrap

from conftest import ROOT

PROBE = textwrap.dedent(
    """
    import inspect, sys, warnings
    sys.path.insert(0, sys.argv[1])
    import reframe.core.variables
    import reframe.core.warnings as rfm_warnings
    import quiet_deprecations

    walks, stack = [], inspect.stack

    def counted(*args, **kwargs):  # the walk, counted, without this frame
        walks.append(1)
        return stack(*args, **kwargs)[1:]

    inspect.stack = counted
    with rfm_warnings.suppress_deprecations():
        rfm_warnings.user_deprecation_warning("an old name")
        reframe.core.variables.user_deprecation_warning("an old name")
    print("suppressed: walks", len(walks))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rfm_warnings.user_deprecation_warning("an old name")
    given = [w for w in caught if issubclass(w.category, rfm_warnings.ReframeDeprecationWarning)]
    print("wanted: walks", len(walks), "warnings", len(given), "an old name" in str(given[0].message),
          "at", given[0].filename)
    """
)


def test_a_suppressed_deprecation_skips_the_walk_and_a_wanted_one_is_given():
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, os.path.join(ROOT, "site-configs")], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    # a wanted warning names the caller (here the probe, run with -c), as ReFrame's own does
    assert proc.stdout.splitlines() == ["suppressed: walks 0", "wanted: walks 1 warnings 1 True at <string>"], (
        proc.stdout
    )
