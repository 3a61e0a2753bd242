# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack test`: the project's own test suite (testsuite.py)."""


def add_parser(sub):
    p = sub.add_parser("test", help="run the project's own test suite")
    p.add_argument(
        "--full",
        action="store_true",
        help="every per-stack check on every stack (default: a representative selection of stacks)",
    )


def main(args):
    from h5stack import testsuite

    return testsuite.run(full=args.full, pytest_args=tuple(args.extra))
