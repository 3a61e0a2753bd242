# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A ReFrame deprecation warning that is suppressed skips ReFrame's walk of the stack.

ReFrame 4.10's `user_deprecation_warning` walks the whole Python stack with source
context (`inspect.stack()`) before it asks whether the warning is wanted. Every test
instance's variable injection warns inside `suppress_deprecations()` (RegressionTest's
deprecated alias `variables`), so loading this repository's checks spent about a third
of its time (1.2 of 3.5 s on the 2-core machine) on walks whose warning was then dropped.
Imported by common.py, so in every ReFrame process that loads a site config: the walk
that ReFrame's warning module makes (its `inspect.stack`) is empty while the warning
filters plainly ignore ReFrame's deprecations; otherwise it is the real one, so a wanted
warning names the user's file and line, as before.
"""

import inspect
import warnings

import reframe.core.warnings as rfm_warnings


def _ignored():
    """Whether the first warning filter that applies to ReFrame's deprecations ignores all
    of them (suppress_deprecations puts such a filter first); False where a filter names
    a message, a module or a line (ReFrame's own walk decides there)."""
    for action, message, category, module, lineno in warnings.filters:
        if issubclass(rfm_warnings.ReframeDeprecationWarning, category):
            return action == "ignore" and message is None and module is None and not lineno
    return False


class _Inspect:
    """`inspect` as reframe.core.warnings sees it."""

    def __getattr__(self, name):
        return getattr(inspect, name)

    @staticmethod
    def stack(context=1):
        return [] if _ignored() else inspect.stack(context)[1:]  # without this frame


rfm_warnings.inspect = _Inspect()
