# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack list`: the stacks and whether they are built (list_: `list` is a builtin)."""


def add_parser(sub):
    sub.add_parser("list", help="show the stacks and whether they are built")


def show():
    """Print one line per stack: its name, built or not, what it holds."""
    from h5stack.stacks.plan import Stacks

    stacks = Stacks()
    width = max(len(n) for n in stacks.names())
    for stack in stacks.all():
        built, detail = stack.status()
        if not built and stack.mpi.optional and detail == "not set up":
            detail = f"optional ({stack.mpi.description}): ./h5stack setup {stack.name}"
        print(f"{stack.name:<{width}}  {'built    ' if built else 'not built'}  {detail}")
    return 0


def main(args):
    return show()
