# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`squeue-here`: ReFrame's squeue backend for a Slurm whose controller runs on this
machine (slurm-local, slurm-cluster), asking the same question sooner and more often.

ReFrame's `squeue` backend queries a job no sooner than 2 s after it was submitted (the
controller of a large site may not list a new job yet; a job squeue does not list counts
as ended) and, in a run that goes one test at a time, sleeps 1, 2, 3, 1, ... s between
queries, once more after the query that found the job ended. A job of one second then
takes three, one of four seconds eight. A controller on loopback lists a job as soon as
sbatch has returned, so this backend queries it after POLL_DELAY and then every
POLL_INTERVAL until it has ended, and returns at once when it has. Everything else
(sbatch, the states, the cancellation of blocked jobs) is ReFrame's own.
"""

import time

from reframe.core.backends import register_scheduler
from reframe.core.exceptions import ConfigError
from reframe.core.schedulers.slurm import SqueueJobScheduler

NAME = "squeue-here"
#: seconds from a submission to its first query
POLL_DELAY = 0.2
#: seconds between the queries of a job that runs
POLL_INTERVAL = 0.25


class SqueueHere(SqueueJobScheduler):
    SQUEUE_DELAY = POLL_DELAY

    def wait(self, job):
        while not self.finished(job):
            self.poll(job)
            if not self.finished(job):
                time.sleep(POLL_INTERVAL)
        if job.is_array:
            self._merge_files(job)


try:
    register_scheduler(NAME)(SqueueHere)
except ConfigError:  # this file loaded a second time in the same process
    pass
