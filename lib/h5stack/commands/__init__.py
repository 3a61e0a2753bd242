# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""One module per command of `./h5stack`, named like it. Each has add_parser(sub), its
part of the parser (standard library only, it runs before the Python environment
exists), and main(args), which checks the arguments, turns them into typed options and
calls the domain code, importing it there. The domain code never sees the argparse
Namespace.

Imports any room below it; not cli.
"""

import argparse


def positive_int(text):
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a positive whole number, got {text!r}")
    return value


def check_seconds(seconds):
    """--time: None, or a positive finite number of seconds (else StepError)."""
    from h5stack.base.ui import StepError

    if seconds is not None and not 0 < seconds < float("inf"):
        raise StepError(f"--time must be a positive number of seconds, not {seconds}")


def json_output(path):
    """--json FILE: its absolute path ("" when not given), refused now (StepError) when
    the results could not be written there after the run: a directory, a parent that does
    not exist or cannot be written."""
    import os

    from h5stack.base.ui import StepError

    if not path:
        return ""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    if os.path.isdir(path):
        raise StepError(f"--json {path}: a directory; name the file to write")
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise StepError(f"--json {path}: cannot write in {parent} (missing, or not writable)")
    return path
