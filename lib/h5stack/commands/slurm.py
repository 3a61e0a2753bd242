# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack slurm start|stop|status|env`: a real Slurm on this machine, system slurm-local
(machine/slurm.py). status exits 3 when it is not running."""


def add_parser(sub):
    p = sub.add_parser("slurm", help="a real Slurm on this machine (system slurm-local): start, stop, status")
    p.add_argument("action", choices=["start", "stop", "status", "env"])


def main(args):
    from h5stack.machine import slurm

    if args.action == "start":
        slurm.start()
        print(f"export SLURM_CONF={slurm.conf_path()}")
    elif args.action == "stop":
        slurm.stop()
    elif args.action == "status":
        print(slurm.status())
        return 0 if slurm.is_running() else 3
    elif args.action == "env":
        print(f"export SLURM_CONF={slurm.conf_path()}")
    return 0
