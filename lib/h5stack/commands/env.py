# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack env STACK`: shell exports that put a built stack to use."""

import os
import sys

from h5stack.base.ui import StepError


def add_parser(sub):
    p = sub.add_parser("env", help="print shell exports that put a stack to use")
    p.add_argument("stack", metavar="STACK")


def main(args):
    from h5stack.stacks.plan import Stacks
    from h5stack.stacks.stackdir import render_sh

    stack = Stacks().get(args.stack)
    built, detail = stack.status()
    if not built:
        raise StepError(f"stack {stack.name} is {detail}; build it with `./h5stack setup {stack.name}`")
    sys.stdout.write(render_sh(stack.description(), as_root=os.geteuid() == 0))
    return 0
