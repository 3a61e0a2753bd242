# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack run`: the ReFrame regression on a system (reframe/regression.py)."""


def add_parser(sub):
    p = sub.add_parser("run", help="run the ReFrame regression (sets up what is missing)")
    p.add_argument("--system", default="generic", help="site config to use (default: generic)")
    p.add_argument("--stack", action="append", default=[], metavar="STACK", help="only these stacks (repeatable)")
    p.add_argument(
        "checks",
        nargs="*",
        metavar="CHECK",
        help="only checks whose name matches (reframe -n): NAME, or NAME%%PARAM=VALUE... with the parameters in the order of the listed name (-- -l lists them), e.g. h5pwrite3dc_verify%%fs_kind=posix%%driver=multifile",
    )
    p.add_argument(
        "--spack-env",
        action="append",
        default=[],
        metavar="DIR",
        help="run on the views of this installed Spack environment instead (repeatable; with --stack: both)",
    )
    p.add_argument(
        "--mpi-runtime",
        action="append",
        default=[],
        metavar="MPI",
        help="run the stacks (--stack, else every stack of its ABI) with this MPI's library and launcher instead "
        "(repeatable; docs/abi.md)",
    )
    p.add_argument("--json", metavar="FILE", help="also write the results (every case, the totals) as JSON to FILE")
    p.add_argument("--no-setup", action="store_true", help="do not build missing stacks")
    p.add_argument(
        "--keep-slurm",
        action="store_true",
        help="slurm-local, slurm-cluster: leave Slurm running if this run started it",
    )


def main(args):
    from h5stack.commands import json_output
    from h5stack.reframe import regression

    opts = regression.Options(
        system=args.system,
        stacks=tuple(args.stack),
        checks=tuple(args.checks),
        spack_envs=tuple(args.spack_env),
        reframe_args=tuple(args.extra),
        setup=not args.no_setup,
        keep_slurm=args.keep_slurm,
        json=json_output(args.json),
        mpi_runtimes=tuple(args.mpi_runtime),
    )
    return regression.run(opts)
