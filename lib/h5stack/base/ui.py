# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Messages, errors and long-running commands with progress and full logs.

Human-readable output goes to stderr (stdout is kept for what other programs read,
e.g. `h5stack env`). A long command's whole output goes to a log file; the terminal
shows what is being built, ninja's [done/total] progress and the elapsed time (a
progress bar on a terminal, a line a minute otherwise, e.g. in CI). On failure the
log's tail and its path are shown.
"""

import os
import re
import subprocess
import sys
import threading
import time

NINJA_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]")


class StepError(RuntimeError):
    """A failure the user can act on; its message says what and where."""


def info(msg):
    print(f"h5stack: {msg}", file=sys.stderr, flush=True)


def fmt_seconds(s):
    s = int(s)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def run_logged(cmd, log, label, cwd=None, env=None):
    """Run cmd, append its output to log, show progress; raise StepError on failure."""
    t0 = time.monotonic()
    # one live bar at a time: a command run beside the main thread's (base/beside.py)
    # reports in lines, which do not erase the bar's
    interactive = (sys.stderr.isatty() and os.environ.get("CI") != "true"
                   and threading.current_thread() is threading.main_thread())  # fmt: skip
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, text=True, errors="replace",
        )  # fmt: skip
        if interactive and _have_rich():
            _follow_with_bar(proc, out, label)
        else:
            _follow_with_lines(proc, out, label, t0)
        rc = proc.wait()
    if rc != 0:
        raise StepError(
            f"{label} failed (exit {rc}) after {fmt_seconds(time.monotonic() - t0)}.\n"
            f"--- last lines of {log} ---\n{tail(log)}--- full log: {log}"
        )
    return time.monotonic() - t0


def _have_rich():
    """rich draws the bar; before the Python environment exists (apt, pip) it may not be there."""
    import importlib.util

    return importlib.util.find_spec("rich") is not None


def _follow_with_lines(proc, out, label, t0):
    last = t0
    done = total = 0
    for line in proc.stdout:
        out.write(line)
        m = NINJA_PROGRESS.match(line)
        if m:
            done, total = int(m.group(1)), int(m.group(2))
        now = time.monotonic()
        if now - last >= 60:
            last = now
            progress = f" {done}/{total} ({100 * done // max(total, 1)}%)" if total else ""
            info(f"  {label}:{progress} {fmt_seconds(now - t0)}")


def _follow_with_bar(proc, out, label):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn("  {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=None)
        for line in proc.stdout:
            out.write(line)
            m = NINJA_PROGRESS.match(line)
            if m:
                bar.update(task, completed=int(m.group(1)), total=int(m.group(2)))
