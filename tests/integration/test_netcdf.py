# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""netCDF-C, the most common parallel HDF5 client, unmodified, through multifile.

netCDF-C 4.10.1 (stacks.yaml `netcdf_builds`: Debian's source package, unpatched)
is built against each tested plain stack of the series listed there. Its parallel test
programs (reframe-tests/netcdf/partests.yaml, at the rank counts of netCDF's own scripts) run
through HDF5's MPI-IO driver (the reference: it must pass) and through multifile as an
MPI-IO program meets it: netCDF calls H5Pset_fapl_mpio itself, so the preload library
with H5MF_MPIO_DRIVER=multifile selects the driver there (files netCDF writes serially,
with a default access list, stay HDF5's serial driver's, as with MPI-IO), with the
driver's default options: the head layout makes the path a file (netCDF sniffs, stats
and removes the path itself). By default the driver built into the twin's libhdf5 on Open
MPI: the plugin runs the programs in the site check netcdf_partests
(reframe-tests/netcdf: MPICH's on generic, Open MPI's across the nodes of slurm-cluster;
tests/integration/test_regression.py); half of the programs by day, in turn (--full:
every program at every count, both variants on both). Every netCDF file both runs leave is compared by
`ncdump` (the multifile one read in place through the driver), except files of a
variable without fill (`_NoFill`), whose never-written elements are undefined. Then nc_reopen
(reframe-tests/netcdf/src/nc_reopen.c: create, reopen and append along the unlimited dimension, reopen
and check every value), its ncdump in place equal to MPI-IO's, and what ncdump without
the driver says of a multifile file.
"""

import glob
import os

import pytest
import yaml

from conftest import FULL, ROOT, Stacks, in_stack, in_turn, preload_library, stacks_set_up

with open(os.path.join(ROOT, "reframe-tests", "netcdf", "partests.yaml")) as _f:
    RUNS = yaml.safe_load(_f)["runs"]
#: the programs: their H5Pset_fapl_mpio becomes multifile, their serial files stay serial
#: (as with MPI-IO: HDF5 refuses variable-length writes through any MPI driver)
MULTIFILE = "H5MF_MPIO_DRIVER=multifile"
#: a serial reader (ncdump) of multifile files
READER = "HDF5_DRIVER=multifile"


def _builds():
    registry = Stacks()
    found = []
    for stack in stacks_set_up():
        comp = registry.netcdf_component(stack)
        if comp:
            found.append((stack.name, comp))
    return found


BUILDS = _builds()
VARIANTS = [
    pytest.param(stack, comp, variant, id=f"{stack}-{variant}")
    for stack, comp in BUILDS
    for variant in ("plugin", "twin")
    if FULL or (variant == "twin" and stack.startswith("openmpi"))
]


def _programs():
    """(program, ranks) of the list: by default half of them, in turn by the day (the whole
    list every two days); all of them at every count with --full."""
    runs = [(run["program"], n) for run in RUNS for n in run["ranks"] + (run.get("full_only", []) if FULL else [])]
    return in_turn(runs, every=2)


def test_some_stack_has_netcdf():
    assert BUILDS, "no tested stack has netCDF-C (stacks.yaml netcdf_builds)"


@pytest.mark.parametrize("stack", [stack for stack, _ in BUILDS])
def test_netcdf_is_on_the_stacks_paths(stack, tmp_path):
    """netCDF-C is part of the stack: `./h5stack env` puts its nc-config and ncdump on
    PATH (parallel netCDF-4, over the stack's HDF5), and stack.json names it."""
    desc = Stacks().get(stack).description()
    [client] = desc["clients"]
    script = "nc-config --version --has-parallel4 --prefix; h5pcc -showconfig | grep 'HDF5 Version'; command -v ncdump"
    rc, out = _run(stack, script, tmp_path)  # (_run reads the last command's stdin from /dev/null)
    assert rc == 0, out
    lines = out.split("\n")
    assert lines[0] == f"netCDF {client['version']}" and lines[1:3] == ["yes", client["prefix"]], out
    assert desc["hdf5_version"] in lines[3] and lines[4] == f"{client['prefix']}/bin/ncdump", out


def _run(stack, script, work, timeout=1200):
    proc = in_stack(stack, f"cd {work}\n{script} < /dev/null", work, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def _each(stack, steps, work, timeout):
    """Run (directory, command) steps in one shell of the stack (its set-up costs a second
    or two per shell); (exit status, output) of each."""
    lines = []
    for i, (where, cmd) in enumerate(steps):
        out = f"{work}/step.{i}"
        lines.append(f"cd {where}; if {cmd} > {out}.out 2>&1 < /dev/null; then echo 0; else echo $?; fi > {out}.rc")
    rc, text = _run(stack, "\n".join(lines), work, timeout)
    assert rc == 0, text[-3000:]
    return [(int(open(f"{work}/step.{i}.rc").read()), open(f"{work}/step.{i}.out").read()) for i in range(len(steps))]


def _driver_env(preload):
    return f"env LD_PRELOAD={preload} {MULTIFILE}"


def _compile(stack, comp, work):
    """netCDF's test programs of the list, compiled from the kept source tree against the
    installed library (config.h from the build tree; h5pcc: some use HDF5 directly) into
    work; the directory."""
    (src,) = glob.glob(os.path.join(comp.work, "src", "netcdf-c-*"))
    flags = f"-I{src}/include -I{comp.build_dir} -I{comp.build_dir}/include -L{comp.prefix}/lib"
    flags += f" -Wl,-rpath,{comp.prefix}/lib -lnetcdf -lm"
    programs = sorted({program for program, _ in _programs()})
    for program in programs:
        os.makedirs(work / os.path.dirname(program), exist_ok=True)
    steps = [(work, f"h5pcc -O1 -w -o {work / p} {src}/{p}.c {flags}") for p in programs]
    for program, (rc, out) in zip(programs, _each(stack, steps, work, 1200)):
        assert rc == 0, f"{program}: {out[-3000:]}"
    return work


def _run_programs(run_in, programs, env, work):
    """Every program of the list, each in its own directory under work; the failures."""
    os.makedirs(work)
    steps = []
    for program, ranks in _programs():
        where = work / f"{os.path.basename(program)}-{ranks}"
        os.makedirs(where)
        steps.append((where, f"timeout 900 mpiexec -n {ranks} {env} {programs}/{program}"))
    failed = []
    for (_, cmd), (rc, out) in zip(steps, _each(run_in, steps, work, 900 * len(steps))):
        if rc != 0:
            failed.append(f"{cmd}: exit {rc}\n{out[-3000:]}")
    return failed


def _dumps(stack, prefix, files, env, work, opts=""):
    """ncdump of each file (one shell), the texts, each checked to exit 0."""
    os.makedirs(work, exist_ok=True)
    steps = [(os.path.dirname(p), f"{env} {prefix}/bin/ncdump {opts} {os.path.basename(p)}") for p in files]
    result = []
    for (_, cmd), (rc, out) in zip(steps, _each(stack, steps, work, 1200)):
        assert rc == 0, f"{cmd}: exit {rc}: {out[-2000:]}"
        result.append(out)
    return result


def _dump(stack, prefix, path, env="", opts=""):
    rc, out = _run(stack, f"{env} {prefix}/bin/ncdump {opts} {os.path.basename(path)}", os.path.dirname(path))
    assert rc == 0, f"ncdump {path}: {out[-2000:]}"
    return out


@pytest.mark.parametrize("stack, comp, variant", VARIANTS)
def test_netcdf_parallel_tests_through_multifile(stack, comp, variant, stacks, stack_descriptions, tmp_path):
    """netCDF's parallel tests through MPI-IO and through multifile: every one passes
    both ways (none may hang: 900 s each), the multifile runs wrote multifile files, and
    every netCDF file both left dumps alike."""
    preload = preload_library(stacks, stack_descriptions, stack)
    run_in = f"{stack}-multifile" if variant == "twin" else stack
    prefix, programs = comp.prefix, _compile(stack, comp, tmp_path / "bin")
    failed = _run_programs(stack, programs, "", tmp_path / "mpio")
    assert not failed, "through MPI-IO (the reference):\n" + "\n\n".join(failed)
    failed = _run_programs(run_in, programs, _driver_env(preload), tmp_path / "multifile")
    assert not failed, f"through multifile ({variant}):\n" + "\n\n".join(failed)
    assert glob.glob(str(tmp_path / "multifile" / "*" / "*.h5mf")), "no multifile directory: was the driver used?"
    pairs = [
        (ref, ref.replace(str(tmp_path / "mpio"), str(tmp_path / "multifile")))
        for ref in sorted(glob.glob(str(tmp_path / "mpio" / "*" / "*.nc")))
    ]
    pairs = [(ref, mine) for ref, mine in pairs if os.path.isfile(mine)]
    headers = _dumps(stack, prefix, [ref for ref, _ in pairs], "", tmp_path / "dump-h", opts="-h -s")
    pairs = [pair for pair, header in zip(pairs, headers) if '_NoFill = "true"' not in header]
    undefined = len(headers) - len(pairs)
    refs = _dumps(stack, prefix, [ref for ref, _ in pairs], "", tmp_path / "dump-ref")
    mines = _dumps(run_in, prefix, [mine for _, mine in pairs], READER, tmp_path / "dump-mine")
    for (_, mine), a, b in zip(pairs, refs, mines):
        assert a == b, f"ncdump of {mine} differs from MPI-IO's"
    compared = len(pairs)
    assert compared > 0, f"no netCDF file of both runs to compare ({undefined} with undefined elements)"


@pytest.mark.parametrize("stack, comp, variant", VARIANTS)
def test_netcdf_reopen_append_and_dump(stack, comp, variant, stacks, stack_descriptions, tmp_path):
    """A restarted run's pattern through netCDF's API (nc_reopen.c, 2 ranks):
    create, reopen read-write and append, reopen and check every value; through
    multifile (the path a head beside its directory) as through MPI-IO; ncdump of the
    file in place equals ncdump of MPI-IO's; ncdump without the driver prints what the
    file is and how to read it."""
    preload = preload_library(stacks, stack_descriptions, stack)
    run_in = f"{stack}-multifile" if variant == "twin" else stack
    prefix = comp.prefix
    src = os.path.join(ROOT, "reframe-tests", "netcdf", "src", "nc_reopen.c")
    exe = tmp_path / "nc_reopen"
    flags = f"-I{prefix}/include -L{prefix}/lib -Wl,-rpath,{prefix}/lib -lnetcdf"
    rc, out = _run(stack, f"mpicc -O2 -o {exe} {src} {flags}", tmp_path)
    assert rc == 0, out
    for where, how in (("mpio", ""), ("multifile", _driver_env(preload))):
        os.makedirs(tmp_path / where)
        rc, out = _run(run_in if where == "multifile" else stack, f"timeout 600 mpiexec -n 2 {how} {exe} out.nc",
                       tmp_path / where)  # fmt: skip
        assert rc == 0 and "nc_reopen: ok (2 ranks, 3 steps)" in out, f"{where}: {out[-3000:]}"
    head = tmp_path / "multifile" / "out.nc"
    assert head.is_file() and (tmp_path / "multifile" / "out.nc.h5mf").is_dir(), os.listdir(head.parent)
    ref = _dump(stack, prefix, str(tmp_path / "mpio" / "out.nc"))
    assert _dump(run_in, prefix, str(head), READER) == ref, "ncdump in place differs from MPI-IO's"
    plain = _dump(stack, prefix, str(head))
    assert "h5mf merge" in plain and "HDF5_DRIVER=multifile" in plain, plain
