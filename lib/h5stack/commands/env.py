# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack env STACK [--mpi-runtime MPI]`: shell exports that put a built stack to use
(with the library of another MPI of its ABI: stacks/abi.py)."""

import os
import sys

from h5stack.base.ui import StepError


def add_parser(sub):
    p = sub.add_parser("env", help="print shell exports that put a stack to use")
    p.add_argument("stack", metavar="STACK")
    p.add_argument(
        "--mpi-runtime",
        metavar="MPI",
        help="run the stack with this MPI's library and launcher (an MPI of stacks.yaml of the same ABI)",
    )


def main(args):
    from h5stack.stacks.plan import Stacks
    from h5stack.stacks.stackdir import render_sh

    registry = Stacks()
    stack = registry.get(args.stack)
    built, detail = stack.status()
    if not built:
        raise StepError(f"stack {stack.name} is {detail}; build it with `./h5stack setup {stack.name}`")
    desc = stack.description()
    if args.mpi_runtime:
        from h5stack.stacks import abi

        desc = abi.write(stack, registry.mpi(args.mpi_runtime))
    sys.stdout.write(render_sh(desc, as_root=os.geteuid() == 0))
    return 0
