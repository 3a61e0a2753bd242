# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack patches [--check]`: the HDF5 patches that build the multifile driver in (spack/patches.py)."""


def add_parser(sub):
    p = sub.add_parser("patches", help="regenerate the HDF5 patches (multifile built in) and h5vfd's C constants")
    p.add_argument("--check", action="store_true", help="only check that the committed files are current")


def main(args):
    from h5stack.spack import patches

    return patches.run(check=args.check)
