# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack spack-config`: this machine's Spack scope (spack/config.py)."""


def add_parser(sub):
    p = sub.add_parser("spack-config", help="write this machine's Spack scope (externals, one prefix per MPI)")
    p.add_argument("--output", metavar="DIR", help="where (default: $H5STACK_HOME/spack/generic)")


def main(args):
    from h5stack.spack import config

    return config.run(output=args.output)
