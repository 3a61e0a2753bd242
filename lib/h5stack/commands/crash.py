# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack crash`: crash states of multifile writes and merges under power loss
(verify/crash/)."""

import re

from h5stack.base.ui import StepError, info
from h5stack.commands import check_seconds, positive_int


def add_parser(sub):
    p = sub.add_parser("crash", help="crash states of multifile writes and merges under power loss (strace)")
    p.add_argument("--seeds", type=positive_int, default=2, help="h5fuzz workloads to record (default 2)")
    p.add_argument("--time", type=float, metavar="SECONDS", help="stop after this long")
    p.add_argument("--stack", default="mpich-hdf5-1.14", metavar="STACK", help="the stack (default mpich-hdf5-1.14)")
    p.add_argument("--ops", type=positive_int, default=8, help="operations per workload (default 8)")
    p.add_argument(
        "--ranks",
        type=positive_int,
        default=1,
        help="ranks of the write session, and processes of a parallel merge when more than 1 (default 1)",
    )
    p.add_argument("--first-seed", type=positive_int, default=1, help="the first h5fuzz seed (default 1)")
    p.add_argument("--no-merge", action="store_true", help="the write sessions only, not `h5mf merge`")
    p.add_argument(
        "--workload",
        metavar="KIND:SEED:OPS:RANKS[:GRAMMAR]",
        help="one workload (a replay), KIND write, killed (sync=off, a killed process), merge, pmerge (the parallel merge), dump (the DSM server's dumps), hwrite or hmerge (write and merge in the head layout), e.g. write:3:8:1",
    )
    p.add_argument("--point", type=positive_int, help="with --workload and --state: one crash point")
    p.add_argument("--state", metavar="eN|rN", help="with --point: the crash state (enumerated N, or random seed N)")


def main(args):
    from h5stack.verify import crash

    check_seconds(args.time)
    if (args.point is None) != (args.state is None) or (args.point and not args.workload):
        raise StepError("--point and --state go together, with --workload")
    if args.state and not re.fullmatch(r"[er]\d+", args.state):
        raise StepError(f"--state {args.state}: eN (the N-th enumerated state) or rN (random, seed N)")
    try:  # before any set-up
        crash.Workload.parse(args.workload) if args.workload else None
    except ValueError as e:
        raise StepError(str(e)) from None
    opts = crash.Options(
        stack=args.stack, seeds=args.seeds, seconds=args.time or 0.0, ops=args.ops, ranks=args.ranks,
        first_seed=args.first_seed, merge=not args.no_merge, workload=args.workload or "",
        point=args.point or 0, state=args.state or "",
    )  # fmt: skip
    try:  # a replay's point or state that the recording does not have
        return crash.run(opts, say=info)
    except ValueError as e:
        raise StepError(str(e)) from None
