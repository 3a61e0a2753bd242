# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A ReFrame deprecation warning that is suppressed returns at once.

ReFrame 4.10's `user_deprecation_warning` walks the whole Python stack with source
context (`inspect.stack()`) before it asks whether the warning is wanted. Every test
instance's variable injection warns inside `suppress_deprecations()` (RegressionTest's
deprecated alias `variables`), so loading this repository's checks spent about a third
of its time (1.2 of 3.5 s on the 2-core machine) on walks whose warning was then dropped.
Imported by common.py, so in every ReFrame process that loads a site config: a warning
that the filters ignore returns before the walk; every other one is ReFrame's own, as
before.
"""

import sys
import warnings

import reframe.core.warnings as rfm_warnings

_warn = rfm_warnings.user_deprecation_warning


def _ignored():
    """Whether the first of the warning filters that applies to ReFrame's deprecations
    ignores them (suppress_deprecations puts an "ignore" one first)."""
    for action, message, category, module, _ in warnings.filters:
        if message is None and module is None and issubclass(rfm_warnings.ReframeDeprecationWarning, category):
            return action == "ignore"
    return False


def user_deprecation_warning(message, from_version="0.0.0"):
    if not _ignored():
        _warn(message, from_version)


# ReFrame's modules import the function by name: those loaded already, and the source
# of those loaded later
for _module in [m for m in list(sys.modules.values()) if getattr(m, "user_deprecation_warning", None) is _warn]:
    _module.user_deprecation_warning = user_deprecation_warning
