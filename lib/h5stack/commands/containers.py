# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack containers build|list [MPI ...]`: Apptainer images of the stacks, one per MPI
(machine/images.py, containers/h5stack.def)."""

import os

from h5stack.base.ui import StepError


def add_parser(sub):
    p = sub.add_parser("containers", help="Apptainer images of the stacks (containers/h5stack.def)")
    p.add_argument("action", choices=["build", "list"])
    p.add_argument("flavours", nargs="*", metavar="MPI", help="mpich, openmpi (default: both)")
    p.add_argument(
        "--base",
        metavar="URI",
        help="the image's OS: e.g. docker://debian:12 (default: a debootstrap Debian 12, offline)",
    )
    p.add_argument("--force", action="store_true", help="build even if a cached image matches")


def main(args):
    from h5stack.machine import images

    flavours = args.flavours or list(images.FLAVOURS)
    for flavour in flavours:
        if flavour not in images.FLAVOURS:
            raise StepError(f"unknown MPI flavour {flavour!r} (expected {', '.join(images.FLAVOURS)})")
    for flavour in flavours:
        if args.action == "build":
            images.build_image(flavour, base=args.base, force=args.force)
        link = images.image_link(flavour)
        state = (
            f"{os.path.realpath(link)} ({os.path.getsize(link) / 1e6:.0f} MB)" if os.path.exists(link) else "not built"
        )
        print(f"{flavour:<8} {state}")
    return 0
