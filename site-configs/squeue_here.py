# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`squeue-here`: ReFrame's squeue backend for a Slurm whose controller runs on this
machine (slurm-local, slurm-cluster), asked sooner after a submission.

ReFrame's `squeue` backend queries a job no sooner than 2 s after it was submitted (the
controller of a large site may not list a new job yet, and a job squeue does not list
counts as ended), so no job takes less than 2 s. A controller on loopback lists a job as
soon as sbatch has returned: this backend queries it from POLL_DELAY on. How often
ReFrame asks after that is its `general` poll rate (common.py: THIS_MACHINE_SYSTEMS).
Everything else (sbatch, the states, the cancellation of blocked jobs) is ReFrame's own.
"""

from reframe.core.backends import register_scheduler
from reframe.core.exceptions import ConfigError
from reframe.core.schedulers.slurm import SqueueJobScheduler

NAME = "squeue-here"
#: seconds from a submission to its first query
POLL_DELAY = 0.2


class SqueueHere(SqueueJobScheduler):
    SQUEUE_DELAY = POLL_DELAY


try:
    register_scheduler(NAME)(SqueueHere)
except ConfigError:  # this file loaded a second time in the same process, under another name
    pass
