# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A suite of programs run one after the other in one job, each bounded: a program that
has not ended within the bound is a hang, reported with the stacks of its processes on
the job's node, and killed; the next one runs (src/bounded_runs.sh). For the checks that
run another project's test suite (HDF5's testpar, netCDF-C's parallel tests)."""

import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, variable

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src", "bounded_runs.sh")


class Run:
    """One run of the suite: its name (unique in the suite), the program, the command line
    that starts it (a list: the launcher, the program, its arguments), the exit statuses
    that pass and the directory it runs in (made; default: the stage directory)."""

    def __init__(self, name, exe, command, statuses=(0,), cwd=None):
        self.name, self.exe, self.command, self.statuses, self.cwd = name, exe, command, statuses, cwd

    def line(self):
        where = f"mkdir -p {shlex.quote(self.cwd)} && cd {shlex.quote(self.cwd)} && " if self.cwd else ""
        fields = [self.name, " ".join(str(s) for s in self.statuses), self.exe, where + shlex.join(self.command)]
        assert not any("\t" in f or "\n" in f for f in fields), fields
        return "\t".join(fields) + "\n"


def runner_command(test, label, bound, runs):
    """The job's command that runs `runs` in order (the plan written into the stage
    directory), each bounded to `bound` seconds; its lines start with `label: `."""
    plan = os.path.join(test.stagedir, f"{label}.plan")
    with open(plan, "w") as f:
        f.writelines(run.line() for run in runs)
    return f"bash {shlex.quote(RUNNER)} {shlex.quote(label)} {int(bound)} {shlex.quote(plan)}"


def runs_sanity(test, label, names):
    """Assertions: a verdict for each run of `names`, in order, and every one a pass
    (a failure or a hang names the runs)."""
    ran = sn.extractall(rf"^{label}: (\S+): ", test.stdout, 1)
    failed = sn.extractall(rf"^{label}: (\S+: (?:fail|hang).*)$", test.stdout, 1)
    return [
        sn.assert_true(names, msg=f"no {label} program to run"),
        sn.assert_eq(ran, list(names), msg=f"expected a verdict for each of {list(names)}, got {{0}}"),
        sn.assert_eq(failed, [], msg=f"{label} programs failed or hung: {{0}}"),
    ]


def parse_share(share, check):
    """(K, N) of "K/N", 1 <= K <= N; ValueError naming the check's setting otherwise."""
    try:
        k, n = (int(v) for v in share.split("/"))
    except ValueError:
        k = n = 0
    if not 1 <= k <= n:
        raise ValueError(f"{check}.share={share!r}: K/N with 1 <= K <= N (e.g. 1/2)")
    return k, n


def share_items(items, share, check):
    """The items of share "K/N" (every N-th from the K-th, 1-based) of `check`'s setting."""
    k, n = parse_share(share, check)
    return [item for i, item in enumerate(items) if i % n == k - 1]


class SuiteMixin(rfm.RegressionTestPlugin):
    """What a check of another project's suite, through MPI-IO or multifile (its `driver`
    parameter), shares: the bound of a run, the share of the suite, the multifile variant
    only where the driver package is, a time limit that lets every run hang, and the
    preload library that turns an application's H5Pset_fapl_mpio into the driver."""

    #: seconds a program may take before it is a hang
    bound = variable(int, value=600)
    #: "K/N": every N-th run from the K-th (1-based), in the suite's order
    share = variable(str, value="1/1")

    @run_after("init")
    def need_the_driver_package(self):
        if self.driver == "multifile":
            self.valid_prog_environs = [f"{e} +hdf5-vfd-multifile" for e in self.valid_prog_environs]

    def share_of(self, items):
        """The items of this run's share."""
        return share_items(items, self.share, type(self).__name__)

    def allow_runs(self, count):
        """A time limit in which each of `count` runs (and the set-up) may take its bound."""
        self.time_limit = f"{self.bound * (count + 1) + 300}s"

    def preload_words(self, variable_name):
        """What each rank runs under for the multifile variant (none for mpio): the driver
        package's preload library with `variable_name`=multifile."""
        if self.driver != "multifile":
            return []
        prefix = self.current_environ.extras["multifile_prefix"]
        return ["env", f"LD_PRELOAD={prefix}/lib/libh5mf_preload.so", f"{variable_name}=multifile"]
