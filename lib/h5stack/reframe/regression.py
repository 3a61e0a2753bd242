# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`h5stack run`: the ReFrame regression on one system, and its results table.

Sets up the requested local stacks (unless --no-setup), then runs
  reframe -C site-configs/<system>/reframe.py --system <system> -r [-p ^STACK$ ...] [-n CHECK ...]
With --spack-env DIR (repeatable) it runs on the views of installed Spack environments
instead (programming environments spack-<environment>[-<view>]; the site config reads
them from $H5STACK_SPACK_ENVS), and on local stacks only where --stack names them.
with its stage/output under $H5STACK_HOME/reframe/<system>/, perflogs under
$H5STACK_HOME/perflogs/ and the JSON run report under $H5STACK_HOME/reports/.
Afterwards it prints one row per test case (check, stack, result, key figures) and
exits with ReFrame's status; with --json FILE it also writes the rows and the totals as
JSON (what programs and the project's tests read instead of the table).
"""

import glob
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from h5stack.base import paths, results
from h5stack.base.ui import StepError, info
from h5stack.reframe import faults
from h5stack.reframe.environs import MPI_RUNTIMES_VARIABLE, reframe_environ_name, stacks_by_environ
from h5stack.reframe.spackviews import SPACK_ENVS_VARIABLE

#: systems whose Slurm h5stack starts on this machine, and the command that does (machine/<command>.py)
SCHEDULERS = {"slurm-local": "slurm", "slurm-cluster": "cluster"}
#: systems that run on this machine with its local stacks (set up before a run)
LOCAL_SYSTEMS = ("generic", *SCHEDULERS)
#: systems whose runs go one test at a time: under a Slurm on this machine, ReFrame's local
#: builds of the next tests would run beside a benchmark's exclusive job on the same cores
SERIAL_SYSTEMS = tuple(SCHEDULERS)


def systems():
    return sorted(
        os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(paths.SITE_CONFIGS, "*", "reframe.py"))
    )


#: run in a child: loads the merged site configuration; a site config's own error (the file
#: and the reason) is printed alone, with status 3
CONFIG_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
from common import SiteConfigError
try:
    import config
except SiteConfigError as e:
    print(e)
    sys.exit(3)
"""


def config_file(system):
    """The merged configuration of every system (site-configs/config.py), checked now: an
    unknown system or a malformed site config is an error before anything runs."""
    names = systems()
    if system not in names:
        raise StepError(f"unknown system {system!r}; the systems are: {', '.join(names)}")
    # loaded and checked as ReFrame will load it, in a process of its own (the command
    # line does not import the site configs: they import lib/h5stack); a SiteConfigError
    # comes back as its message on stdout and exit status 3, anything else as a traceback
    proc = subprocess.run([sys.executable, "-c", CONFIG_PROBE, paths.SITE_CONFIGS], capture_output=True, text=True)
    if proc.returncode == 3:
        raise StepError(proc.stdout.strip())
    if proc.returncode != 0:
        raise StepError(f"{paths.SITE_CONFIGS}/config.py does not load:\n{proc.stderr[-2000:]}")
    return os.path.join(paths.SITE_CONFIGS, "config.py")


def reframe_command(system, stacks=(), checks=(), extra=(), report=None, environs=(), config=None):
    """The reframe command line: on these stacks (Stack) and environments (names), with the
    merged configuration `config` (a path config_file gave; checked now when not given)."""
    config = config or config_file(system)
    cmd = ["reframe", "-C", ":" + config, "--system", system]  # ":" drops the builtin config
    # a dry run writes job scripts and empty perflog rows: keep both apart from real runs
    dry = "--dry-run" in extra
    cmd += ["--prefix", paths.sub("reframe-dry-run" if dry else "reframe", system)]
    cmd += ["--perflogdir", paths.sub("perflogs-dry-run" if dry else "perflogs")]
    if report:
        cmd += ["--report-file", report]
    names = [reframe_environ_name(s.name) for s in stacks] + list(environs)
    if names:
        cmd += ["-p", "^(" + "|".join(names) + ")$"]
    for check in checks:
        cmd += ["-n", check]
    extra = list(extra)
    if system in SERIAL_SYSTEMS and not any(a.startswith("--exec-policy") for a in extra):
        cmd += ["--exec-policy", "serial"]
    if not any(a in ("-r", "--run", "-l", "-L", "--list", "--list-detailed", "--dry-run") for a in extra):
        cmd.append("-r")
    return cmd + extra


def summarize(report_path, stack_names=None, dry_run=False):
    """Rows (check, stack, result, figures) from a ReFrame JSON run report.

    stack_names maps ReFrame environment names back to stack names.
    """
    stack_names = stack_names or {}
    with open(report_path) as f:
        report = json.load(f)
    rows = []
    for case in report["runs"][-1]["testcases"]:
        if case.get("fixture") and case["result"] == "pass":
            continue  # builds and other fixtures appear only when they fail
        figures = []
        for key, pv in (case.get("perfvalues") or {}).items():
            value, unit = pv[0], pv[4] if len(pv) > 4 else ""
            shown = f"{value:.4g}" if isinstance(value, (int, float)) else "none"  # a failed extraction
            figures.append(f"{key.rsplit(':', 1)[-1]}={shown} {unit}".rstrip())
        if case.get("num_tasks"):
            figures.append(f"{case['num_tasks']} ranks")
        if case.get("time_run") is not None and not case.get("fixture"):
            figures.append(f"run {case['time_run']:.1f} s")
        result = case["result"]
        if dry_run and result == "pass":
            result, figures = "generated", ["dry run: job script only"]
        if result == "skip":
            figures = ["skipped: the reason is in ReFrame's output above"]
        if result == "xfail":  # ReFrame's expected failure (its report gives no reason)
            figures = ["expected failure: a fault the environment names as known"]
        if result == "fail" and case.get("fail_phase"):
            result = f"FAIL ({case['fail_phase']})"
        stack = stack_names.get(case.get("environ"), case.get("environ", ""))
        rows.append((case.get("display_name") or case["name"], stack, result, ", ".join(figures)))
    return rows


def print_table(rows, title):
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title)
    for col in ("check", "stack", "result", "key figures"):
        table.add_column(col)
    for check, stack, result, figures in rows:
        style = {"pass": "green", "generated": "green", "skip": "yellow", "xfail": "yellow"}.get(result, "red")
        table.add_row(Text(check), Text(stack), Text(result, style=style), Text(figures))
    width = max(120, os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else 160)
    Console(width=width, emoji=False).print(table)  # names as they are: "dsm:mask:16m" is no emoji


def spack_environs(env_dirs):
    """ReFrame environment names of the views of installed Spack environments (checked now,
    so a missing or uninstalled environment is an error before anything runs)."""
    from h5stack.reframe.spackviews import SpackViewError, spack_view_environments

    try:
        return [e["name"] for e in spack_view_environments([], env_dirs)]
    except (SpackViewError, OSError, ValueError, KeyError) as e:
        raise StepError(f"--spack-env: {e}") from None


def start_scheduler(system, dry_run):
    """(module, whether this run started it) for a system whose Slurm runs here, else (None, False).
    A running emulated cluster with nodes down is used as it is: the run goes on with the
    nodes that are up, and says which are not."""
    if system not in SCHEDULERS:
        return None, False
    from h5stack.machine import cluster, slurm

    module = {m.__name__.rsplit(".", 1)[1]: m for m in (slurm, cluster)}[SCHEDULERS[system]]
    if dry_run:
        return module, False
    return module, module.start_for_run()


def count(rows, dry_run=False):
    """{passed, skipped, xfailed, failed} of the rows (checks and failed fixtures); a dry run's
    generated scripts count as passed."""
    ok = "generated" if dry_run else "pass"
    totals = {
        "passed": sum(r[2] == ok for r in rows),
        "skipped": sum(r[2] == "skip" for r in rows),
        "xfailed": sum(r[2] == "xfail" for r in rows),  # a fault the environment names as known showed
    }
    totals["failed"] = len(rows) - sum(totals.values())
    return totals


def write_summary(path, system, rows, totals, report, status, seconds, fault_rows=()):
    """The run's results as JSON for programs (`--json`): one entry per row of the table,
    the check's name and its parameters apart, the totals, and the fault checks' verdicts
    (faults.py: what is broken where)."""
    cases = []
    for name, stack, result, figures in rows:
        check, _, variant = name.partition(" ")
        cases.append({"check": check, "variant": variant.strip(), "stack": stack, "result": result, "figures": figures})
    summary = {
        "system": system, "status": status, "seconds": round(seconds, 1), "totals": totals,
        "reframe_report": report, "cases": cases, "faults": list(fault_rows),
    }  # fmt: skip
    if report is None:
        summary["error"] = "ReFrame wrote no report: no result of any check"
    return results.write_json(path, summary)


def performance_page():
    """The HTML page of the perflogs, or why there is none."""
    from h5stack.reframe import report as html_report

    try:
        page, nfigs, _ = html_report.write_report()
        info(f"performance report: {page} ({nfigs} plots)")
    except StepError as e:
        info(f"no performance report: {e}")


@dataclass(frozen=True)
class Options:
    """What `./h5stack run` was asked (typed; built from the command line by commands/run.py)."""

    system: str = "generic"
    stacks: tuple = ()  # stack names (default: every local stack, unless spack_envs)
    checks: tuple = ()  # only checks whose name matches (reframe -n)
    spack_envs: tuple = ()  # installed Spack environments whose views to run on
    reframe_args: tuple = ()  # passed on to reframe (what follows `--`)
    setup: bool = True  # set up missing local stacks first
    keep_slurm: bool = False  # leave a Slurm this run started running
    json: str = ""  # write the results as JSON to this file
    mpi_runtimes: tuple = ()  # run the stacks with these MPIs' libraries instead (stacks/abi.py)


def runtime_environs(registry, stacks, mpi_names):
    """Write the runtime directory of each stack (default: every stack that is set up)
    with each of these MPIs' libraries where their ABI allows it; (their directories, their
    names). A named stack that none of them can take is refused with the reason."""
    from h5stack.stacks import abi

    dirs, names, used = [], [], set()
    mpis = [registry.mpi(n) for n in mpi_names]
    candidates = stacks or [s for s in registry.in_use() if s.description()]  # none named: those set up
    for mpi in mpis:
        pairs = [s for s in candidates if s.mpi.name != mpi.name and abi.same_family(s.mpi, mpi)]
        if not pairs:
            raise StepError(f"--mpi-runtime {mpi.name}: no stack {'named' if stacks else 'set up'} keeps "
                            f"{mpi.description}'s ABI (docs/abi.md)")  # fmt: skip
        for stack in pairs:
            desc = abi.write(stack, mpi)
            dirs.append(desc["stack_dir"])
            names.append(desc["name"])
            used.add(stack.name)
    for stack in stacks:  # a named stack that no runtime takes: the reason of the first
        if stack.name not in used:
            abi.check_compatible(stack, mpis[0])
    return dirs, names


def run(opts):
    from h5stack.stacks.plan import Stacks

    config = config_file(opts.system)  # validate before building anything
    registry = Stacks()
    stacks = [registry.get(name) for name in opts.stacks]  # each name looked up here, once
    env_dirs = [os.path.abspath(d) for d in opts.spack_envs]
    environs = spack_environs(env_dirs)
    if opts.system in LOCAL_SYSTEMS and opts.setup and (stacks or not env_dirs):
        from h5stack.machine import images

        registry.setup(stacks or registry.in_use())  # none named: every stack that will run, current
        images.setup_images(registry, stacks)  # reframe-tests/containers
        config = config_file(opts.system)  # what the set-up made is part of it: checked again
    env, runtime_names = dict(os.environ), []
    if opts.mpi_runtimes:  # the stacks with other MPIs' libraries, in place of the stacks themselves
        runtime_dirs, runtime_names = runtime_environs(registry, stacks, opts.mpi_runtimes)
        env[MPI_RUNTIMES_VARIABLE] = os.pathsep.join(runtime_dirs)
        environs, stacks = environs + [reframe_environ_name(n) for n in runtime_names], []
        info(f"MPI runtimes: {', '.join(runtime_names)}")
    dry = "--dry-run" in opts.reframe_args
    scheduler, started = start_scheduler(opts.system, dry)
    report = os.path.join(paths.sub("reports"), f"run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json")
    cmd = reframe_command(opts.system, stacks, list(opts.checks), list(opts.reframe_args), report, environs, config)
    if scheduler:
        env["SLURM_CONF"] = scheduler.conf_path()
    if env_dirs:
        env[SPACK_ENVS_VARIABLE] = os.pathsep.join(env_dirs)
        info(f"Spack environments: {', '.join(env_dirs)} -> {', '.join(environs)}")
    info("running: " + " ".join(cmd))
    t0 = time.monotonic()
    try:
        rc = subprocess.call(cmd, cwd=paths.ROOT, env=env)
    finally:
        if started and not opts.keep_slurm:
            scheduler.stop()
    names = [s.name for s in registry.all()] + runtime_names
    written = show_results(opts, report, names, rc, time.monotonic() - t0)
    return rc or (0 if written else 1)


def show_results(opts, report, stack_names, rc, seconds):
    """The table of a run's ReFrame report (its rows name these stacks), its totals, the
    JSON summary (--json) and the performance page; False when the summary asked for could
    not be written."""
    dry = "--dry-run" in opts.reframe_args
    listing = any(a in ("-l", "-L", "--list", "--list-detailed") for a in opts.reframe_args)
    environs = stacks_by_environ(stack_names)
    rows = summarize(report, environs, dry) if os.path.exists(report) else []
    if not rows and rc == 0 and not listing:  # nothing ran is no pass
        named = f" ({', '.join(opts.checks)})" if opts.checks else ""
        info(
            f"error: no check ran{named}: none of that name runs on these stacks (a name's parameters go in "
            "the order of its listed name: `-- -l` lists them), or a check file did not load (ReFrame's "
            "warnings above)"
        )
        return False
    if not os.path.exists(report):
        return not opts.json or write_summary(opts.json, opts.system, [], count([], dry), None, rc, seconds)
    print_table(rows, f"h5stack regression on {opts.system} ({seconds:.0f} s)")
    totals = count(rows, dry)
    known = f", {totals['xfailed']} expected failure(s) (known faults)" if totals["xfailed"] else ""
    print(f"{totals['passed']} {'generated' if dry else 'passed'}, {totals['skipped']} skipped, "
          f"{totals['failed']} failed{known}")  # fmt: skip
    info(f"report: {report}; perflogs: {paths.sub('perflogs-dry-run' if dry else 'perflogs')}")
    fault_rows = [] if dry else faults.rows_of_file(report, environs)
    written = not opts.json or write_summary(opts.json, opts.system, rows, totals, report, rc, seconds, fault_rows)
    if not dry:
        performance_page()
    return written
