# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""A suite of programs run one after the other in one job, each bounded: a program that
has not ended within the bound is a hang, reported with the stacks of its processes on
the job's node, and killed; the next one runs (src/bounded_runs.sh). For the checks that
run another project's test suite (HDF5's testpar, netCDF-C's parallel tests)."""

import os
import shlex

import reframe.utility.sanity as sn

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
