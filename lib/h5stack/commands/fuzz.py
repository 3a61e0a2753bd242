# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack fuzz`: differential fuzzing of the drivers against MPI-IO (verify/fuzz.py,
packages/h5fuzz)."""

from h5stack.base.ui import StepError
from h5stack.commands import check_seconds, json_output

#: the seeds of a run limited by --time alone: more than any time allows
UNLIMITED_SEEDS = 1000000


def add_parser(sub):
    p = sub.add_parser("fuzz", help="differential fuzzing of the drivers against MPI-IO (packages/h5fuzz)")
    p.add_argument("--seeds", type=int, help="workloads to try (default 10; with --time: as many as fit)")
    p.add_argument("--time", type=float, metavar="SECONDS", help="stop after this long (or --seeds, if given, first)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--seed", type=int, help="this seed only (a replay); default: seeds from a random start")
    which.add_argument(
        "--case", choices=["straddle", "metadata", "snapshot"], help="a fixed workload of h5fuzz instead of seeds"
    )
    which.add_argument(
        "--regressions",
        action="store_true",
        help="the workloads that once exposed faults (packages/h5fuzz/regressions.yaml), each on every pair",
    )
    p.add_argument("--stack", action="append", default=[], metavar="STACK", help="only these stacks (repeatable)")
    p.add_argument(
        "--driver",
        action="append",
        default=[],
        metavar="D",
        help="only these variants: multifile, multifile-linked, mpiposix, dsm, dsm:<distribution> (repeatable)",
    )
    p.add_argument("--ranks", type=int, help="ranks of every workload (default: 1..--max-ranks by seed)")
    p.add_argument("--max-ranks", type=int, default=8, help="the most ranks a seed picks (default 8)")
    p.add_argument("--ops", type=int, default=60, help="operations per workload (default 60)")
    p.add_argument(
        "--grammar",
        type=int,
        choices=[1, 2, 3, 4, 5, 6],
        default=1,
        help="h5fuzz's generator: 1 (default), 2 (file types, filters, transfer variations, collective "
        "reads, deletes, chunk caches, alignment, latest format), 3 (2 and element types: integers, "
        "floats, compound, string, enum, array; 3-D datasets; paged file space), 4 (3 and nbit, "
        "scaleoffset, which HDF5 1.14.6 itself fails), 5 (3 and 4-D and 5-D datasets, the file "
        "created and reopened by fewer ranks than the job has) or 6 (5 and collective transfers of "
        "several datasets in one H5Dwrite_multi or H5Dread_multi); see packages/h5fuzz/README.md",
    )
    p.add_argument("--no-perturb", action="store_true", help="no slowed ranks and no clocks of their own")
    p.add_argument("--no-minimise", action="store_true", help="report failures without minimising them")
    p.add_argument("--keep", action="store_true", help="keep the files of passing cases too")
    p.add_argument("--json", metavar="FILE", help="also write every case with its verdict, and the totals, as JSON")
    p.add_argument(
        "--launcher",
        choices=["mpiexec", "srun"],
        default="mpiexec",
        help="how ranks start: the MPI's mpiexec on this node (default), or srun over the nodes of the "
        "Slurm allocation the fuzzer runs in (ranks round-robin; srun's PMI from SLURM_MPI_TYPE)",
    )


def options(args):
    """fuzz.Options of the command line, checked."""
    from h5stack.verify import fuzz

    for name in ("seeds", "ranks", "max_ranks", "ops"):
        value = getattr(args, name)
        if value is not None and not 1 <= value <= (100000 if name == "ops" else 1000000):
            raise StepError(f"--{name.replace('_', '-')} must be a positive number, not {value}")
    check_seconds(args.time)
    return fuzz.Options(
        seeds=args.seeds or (UNLIMITED_SEEDS if args.time else 10), seconds=args.time or 0.0, seed=args.seed, case=args.case or "",
        regressions=args.regressions, stacks=tuple(args.stack), drivers=tuple(args.driver), ranks=args.ranks,
        max_ranks=args.max_ranks, ops=args.ops, grammar=args.grammar, perturb=not args.no_perturb,
        minimise=not args.no_minimise, keep=args.keep, launcher=args.launcher,
        json=json_output(args.json),
    )  # fmt: skip


def main(args):
    from h5stack.stacks.plan import Stacks
    from h5stack.verify import fuzz

    opts = options(args)
    fuzz.check_drivers(opts.drivers)
    stacks = Stacks()
    stacks.setup([stacks.get(n) for n in opts.stacks] or stacks.in_use())  # what will run, current
    return fuzz.run(opts)
