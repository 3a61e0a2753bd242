#!/usr/bin/env python3
# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The effect of each tuning knob of h5pwrite3dc, measured: runs h5pwrite3dc once per
configuration and repetition (each run measures its own raw MPI-IO and POSIX limits on
the same bytes) and prints a Markdown table of median rates and ratios.

    eval "$(./h5stack env mpich-hdf5-1.14)"
    python3 packages/h5pwrite3dc/bench/knobs.py --dir /scratch/me/knobs --ranks 2

Configurations run in turns (one repetition of each, then the next repetition), so a
drift of the machine spreads over all of them.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

#: name -> extra options; the first is the baseline (the original's settings)
CONFIGS = {
    "baseline (mpio collective, fill never)": [],
    "fill at allocation (--fill-time alloc)": ["--fill-time", "alloc"],
    "alignment 1 MiB (--alignment 1m)": ["--alignment", "1m"],
    "latest format (--latest-format)": ["--latest-format"],
    "collective metadata (--coll-metadata)": ["--coll-metadata"],
    "alignment + latest + coll. metadata": ["--alignment", "1m", "--latest-format", "--coll-metadata"],
    "independent transfers (--independent)": ["--independent"],
    "multifile driver (--driver multifile)": ["--driver", "multifile"],
}
#: with --subfiling only: its I/O concentrator threads compete with the ranks for the
#: cores of a small machine (about 1 MB/s on 2 cores here, so minutes per run)
SUBFILING = {"subfiling driver (--driver subfiling)": ["--driver", "subfiling"]}


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dir", required=True, help="directory on the file system to measure (created)")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--nsets", type=int, default=32)
    ap.add_argument("--ndsets", type=int, default=2)
    ap.add_argument("--size", type=int, default=1024, help="image edge g_N (pixels)")
    ap.add_argument("--chunk", type=int, default=512, help="chunk edge ch_N (pixels)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mpiexec", default="mpiexec")
    ap.add_argument("--program", default="h5pwrite3dc")
    ap.add_argument("--only", action="append", help="configurations whose name contains this (repeatable)")
    ap.add_argument("--subfiling", action="store_true", help="also the subfiling driver")
    args = ap.parse_args()

    os.makedirs(args.dir, exist_ok=True)
    every = CONFIGS | (SUBFILING if args.subfiling else {})
    configs = {k: v for k, v in every.items() if not args.only or any(o in k for o in args.only)}
    runs = {name: [] for name in configs}
    total = len(configs) * args.repeat
    done = 0
    for _ in range(args.repeat):
        for name, extra in configs.items():
            done += 1
            with tempfile.TemporaryDirectory(dir=args.dir) as d:
                out = os.path.join(d, "r.json")
                cmd = [args.mpiexec, "-n", str(args.ranks), args.program, os.path.join(d, "series.h5"),
                       str(args.nsets), str(args.ndsets), "--size", str(args.size), "--chunk", str(args.chunk),
                       "--quiet", "--json", out, *extra]  # fmt: skip
                print(f"[{done}/{total}] {shlex.join(cmd)}", file=sys.stderr, flush=True)
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    sys.exit(f"knobs: {name}: h5pwrite3dc failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
                with open(out) as f:
                    runs[name].append(json.load(f))

    first = next(iter(runs.values()))[0]
    print(f"h5pwrite3dc {args.nsets} images of {args.size}x{args.size} into {args.ndsets} datasets on "
          f"{args.ranks} ranks ({first['saved_mb']:.0f} MB), chunks {args.chunk}x{args.chunk}, HDF5 "
          f"{first['hdf5_version']}, {first['mpi_library'].split(',')[0]}; median of {args.repeat} runs "
          f"(min-max); every ratio against the limits of the same run\n")  # fmt: skip
    print("| configuration | rate(write) MB/s | write / raw MPI-IO | write / raw POSIX fpp | rate(create) MB/s "
          "| raw MPI-IO MB/s |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name, rs in runs.items():

        def cell(values, fmt):
            return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"

        print(f"| {name} | {cell([r['rate_write_mb_s'] for r in rs], '{:.0f}')} "
              f"| {cell([r['ratios']['write/mpiio'] for r in rs], '{:.2f}')} "
              f"| {cell([r['ratios']['write/posix_fpp'] for r in rs], '{:.2f}')} "
              f"| {statistics.median(r['rate_create_mb_s'] for r in rs):.0f} "
              f"| {cell([r['limits']['mpiio']['rate_mb_s'] for r in rs], '{:.0f}')} |")  # fmt: skip


if __name__ == "__main__":
    main()
