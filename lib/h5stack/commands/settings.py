# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack settings [--markdown]`: every H5STACK_* variable, its value in effect, its
default and meaning (base/settings.py); --markdown: docs/settings.md."""


def add_parser(sub):
    p = sub.add_parser("settings", help="the H5STACK_* environment variables: values in effect, defaults, meanings")
    p.add_argument("--markdown", action="store_true", help="the table as docs/settings.md has it")


def main(args):
    from h5stack.base import settings

    if args.markdown:
        print(settings.markdown(), end="")
        return 0
    import os

    width = max(len(s.name) for s in settings.SETTINGS)
    for s, value in settings.current():
        shown = os.path.abspath(os.path.expanduser(value)) if s.name == "H5STACK_HOME" else value
        origin = "set" if settings.is_set(s.name) else "default" if s.default else "unset"
        print(f"{s.name:<{width}}  {shown or '-'}  ({origin}; {s.meaning})")
    return 0
