# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack setup [STACK ...]`: build the local stacks (cached), then list them."""

import os

from h5stack.base.ui import StepError


def add_parser(sub):
    p = sub.add_parser("setup", help="build the local stacks (cached)")
    p.add_argument(
        "stacks",
        nargs="*",
        metavar="STACK",
        help="stacks to build (default: all but the optional ones; `./h5stack list` names them)",
    )
    p.add_argument(
        "--tarball",
        action="append",
        default=[],
        metavar="SERIES=PATH",
        help="use this HDF5 release tarball for a series, e.g. 1.14=hdf5-1.14.6.tar.gz",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        help="parallel jobs of each build (default: all cores); two builds run at once, each once those it needs are built",
    )


def tarballs(specs):
    """{series: absolute path} of --tarball SERIES=PATH options."""
    result = {}
    for spec in specs:
        series, sep, path = spec.partition("=")
        if not sep or not path:
            raise StepError(f"--tarball {spec!r}: expected SERIES=PATH, e.g. 1.14=hdf5-1.14.6.tar.gz")
        result[series] = os.path.abspath(path)
    return result


def main(args):
    from h5stack.commands import list_
    from h5stack.stacks.plan import Stacks

    stacks = Stacks(tarballs=tarballs(args.tarball))
    for series in stacks.tarballs:
        if series not in stacks.series:
            raise StepError(f"--tarball: unknown series {series!r}; the series are: {', '.join(stacks.series)}")
    stacks.setup([stacks.get(n) for n in args.stacks], jobs=args.jobs)
    return list_.show()
