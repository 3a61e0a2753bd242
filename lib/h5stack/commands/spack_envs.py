# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack spack-envs [--check]`: environments/ from stacks.yaml (spack/environments.py)."""


def add_parser(sub):
    p = sub.add_parser("spack-envs", help="regenerate environments/ (the Spack environments) from stacks.yaml")
    p.add_argument("--check", action="store_true", help="only check that the committed environments are current")


def main(args):
    from h5stack.spack import environments

    return environments.run(check=args.check)
