# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Work that runs beside other work at a lower priority. A set-up's builds leave a core of a
small machine idle in their serial steps (CMake's configure, Cython, one large C file);
a build run beside them at a higher nice value takes that core and little else."""

import contextlib
import os
import threading

from h5stack.base.ui import info

NICE = 10


@contextlib.contextmanager
def beside(fn, label, nice=NICE):
    """Run fn() in a thread while the with-block runs; the thread and every process it
    starts run `nice` steps nicer (on Linux the nice value is a thread's own, and a child
    inherits its thread's). The block's end waits for fn, then raises fn's exception
    (the block's own first, if both fail)."""
    failure = []

    def target():
        os.nice(nice)
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 (handed to the waiting thread)
            failure.append(e)

    thread = threading.Thread(target=target, name=label, daemon=True)
    thread.start()
    try:
        yield
    except BaseException:
        if thread.is_alive():
            info(f"waiting for {label}, made beside, to end (its processes end with an interrupt)")
        thread.join()
        if failure:
            info(f"{label}, made beside, failed too: {failure[0]}")
        raise
    thread.join()
    if failure:
        raise failure[0]
