# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack spack-config`: this machine's Spack scope (spack/config.py)."""


def add_parser(sub):
    p = sub.add_parser(
        "spack-config",
        help="write this machine's Spack scope (externals, one prefix per MPI)",
        description="Write this machine's Spack scope for `spack -C`. The first run makes h5stack's "
        "Python environment and installs the MPIs of wheels into h5stack's cache (a few minutes; "
        "--no-wheel-mpis names only those already installed).",
    )
    p.add_argument("--output", metavar="DIR", help="where (default: $H5STACK_HOME/spack/generic)")
    p.add_argument("--install-tree", metavar="DIR", help="Spack's install tree (default: $H5STACK_HOME/spack/opt)")
    p.add_argument(
        "--target",
        help="the micro-architecture every package is built for: what the oldest nodes support "
        "(default: site-configs/generic/spack's on x86_64, the machine's family elsewhere)",
    )
    p.add_argument("--no-wheel-mpis", action="store_true", help="install no MPI of wheels (name installed ones)")


def main(args):
    from h5stack.spack import config

    return config.run(
        output=args.output,
        install_tree=args.install_tree,
        target=args.target,
        install_wheel_mpis=not args.no_wheel_mpis,
    )
