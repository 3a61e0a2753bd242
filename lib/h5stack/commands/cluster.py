# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack cluster ACTION`: an emulated multi-node Slurm cluster on this machine, system
slurm-cluster (machine/cluster.py). status exits 3 when a part of it is not running."""

from h5stack.base.ui import StepError, info
from h5stack.commands import positive_int


def add_parser(sub):
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
        "--fs",
        choices=["local", "cephfs", "glusterfs"],
        help="start: the partition's scratch: this machine's disk, shared (local), or a CephFS or GlusterFS "
        "that every node mounts (default: H5STACK_CLUSTER_FS, else local)",
    )
    p.add_argument("--wipe", action="store_true", help="stop: also remove the CephFS's and GlusterFS's data")
    p.add_argument(
        "--clock-step",
        type=int,
        default=7,
        metavar="S",
        help="start: node i's monotonic and boot clocks run i*S seconds ahead (default 7)",
    )


def main(args):
    if args.action not in ("shell", "kill") and (args.node or args.node_command):
        raise StepError(f"`./h5stack cluster {args.action}` takes no node or command (got {args.node!r})")
    if args.action in ("shell", "kill") and not args.node:
        raise StepError(f"`./h5stack cluster {args.action}` needs a node (e.g. node01)")
    from h5stack.machine import cluster

    if args.action == "start":
        cluster.start(args.nodes, args.clock_step, fs=args.fs)
        print(f"export SLURM_CONF={cluster.conf_path()}")
    elif args.action == "stop":
        cluster.stop()
        if args.wipe:
            from h5stack.machine import ceph, glusterfs

            ceph.wipe()
            glusterfs.wipe()
    elif args.action == "status":
        lines, ok = cluster.status_lines()
        print("\n".join(lines))
        return 0 if ok else 3
    elif args.action == "env":
        print(f"export SLURM_CONF={cluster.conf_path()}")
    elif args.action == "kill":
        cluster.kill_node(args.node)
        info(f"{args.node} killed")
    else:
        cluster.shell(args.node, args.node_command)
    return 0
