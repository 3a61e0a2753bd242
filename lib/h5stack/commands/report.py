# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`./h5stack report`: an HTML page with plots from the perflogs (reframe/report.py)."""


def add_parser(sub):
    p = sub.add_parser("report", help="an HTML page with plots from the perflogs (written by run, too)")
    p.add_argument("--perflogs", metavar="DIR", help="perflog directory (default: $H5STACK_HOME/perflogs)")
    p.add_argument("--output", metavar="FILE", help="the page (default: $H5STACK_HOME/reports/report.html)")


def main(args):
    from h5stack.reframe import report

    return report.run(perflogs=args.perflogs, output=args.output)
