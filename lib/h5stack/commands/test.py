# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack test`: the project's own test suite (testsuite/)."""


def add_parser(sub):
    p = sub.add_parser("test", help="run the project's own test suite")
    p.add_argument(
        "--full",
        action="store_true",
        help="every per-stack check on every stack (default: a representative selection of stacks)",
    )
    p.add_argument(
        "--unit",
        action="store_true",
        help="only the unit tier (tests/unit: no stack, no daemon; seconds), without setting up the stacks",
    )


def main(args):
    from h5stack import testsuite

    return testsuite.run(full=args.full, unit=args.unit, pytest_args=tuple(args.extra))
