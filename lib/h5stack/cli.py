# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The `h5stack` command line: setup, list, env, run, test, fuzz, crash, report, patches,
spack-config, slurm, cluster, containers.

build_parser() uses the standard library only (it runs before the virtual
environment exists); each command imports what it needs when it runs.
"""

import argparse
import os
import re
import sys

from h5stack.base.ui import StepError, info
from h5stack.machine import apt, bootstrap

DESCRIPTION = """\
Build local parallel-HDF5 stacks (HDF5 1.14 and 2.x x MPICH and Open MPI, from real
sources) and run the ReFrame regression on them.

On a new machine:
  ./h5stack run     set up what is missing, run the regression on this machine
  ./h5stack test    run the project's own tests (what CI runs)
"""

EPILOG = """\
environment:
  H5STACK_HOME    cache and install root (default ~/.cache/h5stack)
  H5STACK_NO_APT  1: do not install Debian packages (they must be there already)
"""


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a positive whole number, got {text!r}")
    return value


def add_cluster_parser(sub):
    p = sub.add_parser("cluster", help="an emulated multi-node Slurm cluster on this machine (system slurm-cluster)")
    p.add_argument("action", choices=["start", "stop", "status", "env", "shell", "kill"])
    p.add_argument("node", nargs="?", help="shell, kill: the node (node01, ...)")
    p.add_argument(
        "node_command",
        nargs="*",
        metavar="command",
        help="shell: the command to run on the node (default: a shell); after `--` if it has options",
    )
    p.add_argument("--nodes", type=positive_int, default=4, help="start: how many nodes (default 4)")
    p.add_argument(
        "--clock-step",
        type=int,
        default=7,
        metavar="S",
        help="start: node i's monotonic and boot clocks run i*S seconds ahead (default 7)",
    )


def build_parser():
    parser = argparse.ArgumentParser(
        prog="h5stack",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("setup", help="build the local stacks (cached)")
    p.add_argument("stacks", nargs="*", metavar="STACK", help="stacks to build (default: all)")
    p.add_argument(
        "--tarball",
        action="append",
        default=[],
        metavar="SERIES=PATH",
        help="use this HDF5 release tarball for a series, e.g. 1.14=hdf5-1.14.6.tar.gz",
    )
    p.add_argument("-j", "--jobs", type=int, default=None, help="parallel build jobs (default: all cores)")

    sub.add_parser("list", help="show the stacks and whether they are built")

    p = sub.add_parser("env", help="print shell exports that put a stack to use")
    p.add_argument("stack", metavar="STACK")

    p = sub.add_parser("run", help="run the ReFrame regression (sets up what is missing)")
    p.add_argument("--system", default="generic", help="site config to use (default: generic)")
    p.add_argument("--stack", action="append", default=[], metavar="STACK", help="only these stacks (repeatable)")
    p.add_argument("checks", nargs="*", metavar="CHECK", help="only checks whose name matches (reframe -n)")
    p.add_argument(
        "--spack-env",
        action="append",
        default=[],
        metavar="DIR",
        help="run on the views of this installed Spack environment instead (repeatable; with --stack: both)",
    )
    p.add_argument("--no-setup", action="store_true", help="do not build missing stacks")
    p.add_argument(
        "--keep-slurm",
        action="store_true",
        help="slurm-local, slurm-cluster: leave Slurm running if this run started it",
    )

    p = sub.add_parser("patches", help="regenerate patches/ (HDF5 with the multifile driver built in)")
    p.add_argument("--check", action="store_true", help="only check that the committed patches are current")
    p = sub.add_parser("spack-envs", help="regenerate environments/ (the Spack environments) from stacks.yaml")
    p.add_argument("--check", action="store_true", help="only check that the committed environments are current")

    p = sub.add_parser("spack-config", help="write this machine's Spack scope (externals, one prefix per MPI)")
    p.add_argument("--output", metavar="DIR", help="where (default: $H5STACK_HOME/spack/generic)")

    p = sub.add_parser("report", help="an HTML page with plots from the perflogs (written by run, too)")
    p.add_argument("--perflogs", metavar="DIR", help="perflog directory (default: $H5STACK_HOME/perflogs)")
    p.add_argument("--output", metavar="FILE", help="the page (default: $H5STACK_HOME/reports/report.html)")

    p = sub.add_parser("slurm", help="a real Slurm on this machine (system slurm-local): start, stop, status")
    p.add_argument("action", choices=["start", "stop", "status", "env"])

    add_cluster_parser(sub)

    p = sub.add_parser("containers", help="Apptainer images of the stacks (containers/h5stack.def)")
    p.add_argument("action", choices=["build", "list"])
    p.add_argument("flavours", nargs="*", metavar="MPI", help="mpich, openmpi (default: both)")
    p.add_argument(
        "--base",
        metavar="URI",
        help="the image's OS: e.g. docker://debian:12 (default: a debootstrap Debian 12, offline)",
    )
    p.add_argument("--force", action="store_true", help="build even if a cached image matches")

    p = sub.add_parser("fuzz", help="differential fuzzing of the drivers against MPI-IO (packages/h5fuzz)")
    p.add_argument("--seeds", type=int, default=10, help="workloads to try (default 10)")
    p.add_argument("--time", type=float, metavar="SECONDS", help="stop after this long instead")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--seed", type=int, help="this seed only (a replay); default: seeds from a random start")
    which.add_argument("--case", choices=["straddle", "metadata"], help="a fixed workload of h5fuzz instead of seeds")
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
        choices=[1, 2, 3, 4],
        default=1,
        help="h5fuzz's generator: 1 (default), 2 (file types, filters, transfer variations, collective "
        "reads, deletes, chunk caches, alignment, latest format), 3 (2 and element types: integers, "
        "floats, compound, string, enum, array; 3-D datasets; paged file space) or 4 (3 and nbit, "
        "scaleoffset, which HDF5 1.14.6 itself fails); see packages/h5fuzz/README.md",
    )
    p.add_argument("--no-perturb", action="store_true", help="no slowed ranks and no clocks of their own")
    p.add_argument("--no-minimise", action="store_true", help="report failures without minimising them")
    p.add_argument("--keep", action="store_true", help="keep the files of passing cases too")
    p.add_argument(
        "--launcher",
        choices=["mpiexec", "srun"],
        default="mpiexec",
        help="how ranks start: the MPI's mpiexec on this node (default), or srun over the nodes of the "
        "Slurm allocation the fuzzer runs in (ranks round-robin; srun's PMI from SLURM_MPI_TYPE)",
    )

    p = sub.add_parser("crash", help="crash states of multifile writes and merges under power loss (strace)")
    p.add_argument("--seeds", type=positive_int, default=2, help="h5fuzz workloads to record (default 2)")
    p.add_argument("--time", type=float, metavar="SECONDS", help="stop after this long")
    p.add_argument("--stack", default="mpich-hdf5-1.14", metavar="STACK", help="the stack (default mpich-hdf5-1.14)")
    p.add_argument("--ops", type=positive_int, default=8, help="operations per workload (default 8)")
    p.add_argument("--ranks", type=positive_int, default=1, help="ranks of the write session (default 1)")
    p.add_argument("--first-seed", type=positive_int, default=1, help="the first h5fuzz seed (default 1)")
    p.add_argument("--no-merge", action="store_true", help="the write sessions only, not `h5mf merge`")
    p.add_argument("--workload", metavar="KIND:SEED:OPS:RANKS", help="one workload, e.g. write:3:8:1 (a replay)")
    p.add_argument("--point", type=positive_int, help="with --workload and --state: one crash point")
    p.add_argument("--state", metavar="eN|rN", help="with --point: the crash state (enumerated N, or random seed N)")

    p = sub.add_parser("test", help="run the project's own test suite")
    p.add_argument(
        "--full",
        action="store_true",
        help="every per-stack check on every stack (default: a representative selection of stacks)",
    )
    return parser


def parse(argv):
    """Parse argv; what follows `--` is kept apart in args.extra (for reframe/pytest), or is
    the command of `cluster shell`."""
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    args = build_parser().parse_args(argv)
    if args.command == "cluster" and extra:  # the command to run on a node
        args.node_command, extra = args.node_command + extra, []
    elif extra and args.command not in ("run", "test"):
        build_parser().error(f"{args.command} takes no arguments after --")
    args.extra = extra
    return args


def _tarballs(specs):
    result = {}
    for spec in specs:
        series, sep, path = spec.partition("=")
        if not sep or not path:
            raise StepError(f"--tarball {spec!r}: expected SERIES=PATH, e.g. 1.14=hdf5-1.14.6.tar.gz")
        result[series] = os.path.abspath(path)
    return result


def cmd_setup(args):
    from h5stack.stacks.plan import Stacks

    stacks = Stacks(tarballs=_tarballs(args.tarball))
    for series in stacks.tarballs:
        if series not in stacks.series:
            raise StepError(f"--tarball: unknown series {series!r}; the series are: {', '.join(stacks.series)}")
    names = [stacks.get(n).name for n in args.stacks] or stacks.names()
    stacks.setup(names, jobs=args.jobs)
    return cmd_list(args)


def cmd_list(args):
    from h5stack.stacks.plan import Stacks

    stacks = Stacks()
    width = max(len(n) for n in stacks.names())
    for name in stacks.names():
        built, detail = stacks.status(name)
        print(f"{name:<{width}}  {'built    ' if built else 'not built'}  {detail}")
    return 0


def cmd_env(args):
    from h5stack.stacks.plan import Stacks
    from h5stack.stacks.stackdir import render_sh

    stacks = Stacks()
    stack = stacks.get(args.stack)
    built, detail = stacks.status(stack.name)
    if not built:
        raise StepError(f"stack {stack.name} is {detail}; build it with `./h5stack setup {stack.name}`")
    sys.stdout.write(render_sh(stack.description(), as_root=os.geteuid() == 0))
    return 0


def cmd_run(args):
    from h5stack.reframe import regression

    return regression.run(args)


def cmd_patches(args):
    from h5stack.spack import patches

    return patches.run(args)


def cmd_spack_envs(args):
    from h5stack.spack import environments as spackenvs

    return spackenvs.run(args)


def cmd_spack_config(args):
    from h5stack.spack import config as spackconfig

    return spackconfig.run(args)


def cmd_report(args):
    from h5stack.reframe import report

    return report.run(args)


def cmd_cluster(args):
    from h5stack.machine import cluster

    return cluster.run(args)


def cmd_slurm(args):
    from h5stack.machine import slurm

    return slurm.run(args)


def cmd_containers(args):
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


def cmd_fuzz(args):
    from h5stack.verify import fuzz

    for name in ("seeds", "ranks", "max_ranks", "ops"):
        value = getattr(args, name)
        if value is not None and not 1 <= value <= (100000 if name == "ops" else 1000000):
            raise StepError(f"--{name.replace('_', '-')} must be a positive number, not {value}")
    if args.time is not None and not 0 < args.time < float("inf"):
        raise StepError(f"--time must be a positive number of seconds, not {args.time}")
    from h5stack.stacks.plan import Stacks

    Stacks().setup(args.stack or None)
    return fuzz.run(args)


def cmd_crash(args):
    from h5stack.verify import crash

    if args.time is not None and not 0 < args.time < float("inf"):
        raise StepError(f"--time must be a positive number of seconds, not {args.time}")
    if (args.point is None) != (args.state is None) or (args.point and not args.workload):
        raise StepError("--point and --state go together, with --workload")
    if args.state and not re.fullmatch(r"[er]\d+", args.state):
        raise StepError(f"--state {args.state}: eN (the N-th enumerated state) or rN (random, seed N)")
    opts = crash.Options(
        stack=args.stack, seeds=args.seeds, seconds=args.time or 0.0, ops=args.ops, ranks=args.ranks,
        first_seed=args.first_seed, merge=not args.no_merge, workload=args.workload or "",
        point=args.point or 0, state=args.state or "",
    )  # fmt: skip
    try:
        return crash.run(opts, say=info)
    except (ValueError, RuntimeError) as e:
        raise StepError(str(e)) from None


def cmd_test(args):
    from h5stack import testsuite

    return testsuite.run(args)


COMMANDS = {
    "setup": cmd_setup,
    "list": cmd_list,
    "env": cmd_env,
    "run": cmd_run,
    "patches": cmd_patches,
    "spack-envs": cmd_spack_envs,
    "spack-config": cmd_spack_config,
    "report": cmd_report,
    "slurm": cmd_slurm,
    "cluster": cmd_cluster,
    "containers": cmd_containers,
    "fuzz": cmd_fuzz,
    "crash": cmd_crash,
    "test": cmd_test,
}


def main(args):
    try:
        return COMMANDS[args.command](args)
    except StepError as err:
        info(f"error: {err}")
        return 1
    except KeyboardInterrupt:
        info("interrupted")
        return 130


def run(argv):
    """The h5stack command: parsed first (--help and usage errors need nothing
    installed), then the machine made ready for it (the Debian packages, the Python
    environment it is executed again in), then run."""
    args = parse(argv)
    if not bootstrap.in_venv():
        try:
            apt.ensure_packages()
            bootstrap.reexec(argv)
        except StepError as err:
            info(f"error: {err}")
            return 1
    return main(args)
