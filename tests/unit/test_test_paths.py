# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Every file of the checkout that a test names by a literal path (os.path.join(ROOT,
"a", "b", ...)) exists: a test whose program or data moved fails here at once, not
after the stacks are set up."""

import ast
import glob
import os

from conftest import ROOT


def _literal_paths(path):
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "join"
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "ROOT"
            and len(node.args) > 1
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[1:])
            and not any(c in a.value for a in node.args[1:] for c in "*?[")  # glob patterns
        ):
            yield node.lineno, os.path.join(ROOT, *(a.value for a in node.args[1:]))


def test_every_checkout_path_a_test_names_exists():
    tests = glob.glob(os.path.join(ROOT, "tests", "**", "*.py"), recursive=True)
    found = [(t, n, p) for t in tests for n, p in _literal_paths(t)]
    assert len(found) > 10, "no literal path found: the check reads nothing"
    missing = [
        f"{os.path.relpath(t, ROOT)}:{n}: {os.path.relpath(p, ROOT)}" for t, n, p in found if not os.path.exists(p)
    ]
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)
