# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack patches [--check]`: patches/, HDF5 with the multifile driver built in (spack/patches.py)."""


def add_parser(sub):
    p = sub.add_parser("patches", help="regenerate patches/ (HDF5 with multifile built in), h5vfd's C constants")
    p.add_argument("--check", action="store_true", help="only check that the committed patches are current")


def main(args):
    from h5stack.spack import patches

    return patches.run(check=args.check)
