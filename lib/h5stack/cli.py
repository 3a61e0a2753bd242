# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The `h5stack` command line: setup, list, env, run, patches, spack-envs, spack-config,
report, slurm, cluster, containers, fuzz, crash, test.

The parser is assembled from the modules of commands/, one per command. Building it uses
the standard library only (it runs before the virtual environment exists); each
command imports what it needs when it runs.
"""

import argparse
import importlib

from h5stack.base import settings
from h5stack.base.ui import StepError, info
from h5stack.machine import apt, bootstrap

DESCRIPTION = """\
Build local parallel-HDF5 stacks (HDF5 1.14 and 2.x x MPICH and Open MPI, from real
sources) and run the ReFrame regression on them.

On a new machine:
  ./h5stack run     set up what is missing, run the regression on this machine
  ./h5stack test    run the project's own tests (what CI runs)
"""

EPILOG = settings.epilog()

#: the commands in the order of --help; each is the module commands/<name> (- as _; list: list_)
COMMANDS = (
    "setup",
    "list",
    "env",
    "run",
    "patches",
    "settings",
    "spack-envs",
    "spack-config",
    "report",
    "slurm",
    "cluster",
    "containers",
    "fuzz",
    "crash",
    "test",
)


def command_module(name):
    """The module of commands/ that implements the command name."""
    module = "list_" if name == "list" else name.replace("-", "_")
    return importlib.import_module(f"h5stack.commands.{module}")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="h5stack",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        command_module(name).add_parser(sub)
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


def main(args):
    try:
        return command_module(args.command).main(args)
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
