# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""ReFrame programming environments for h5stack's stacks, for the site configs
(site-configs/<system>/reframe.py, through common.py): the local stacks that
`./h5stack setup` built ($H5STACK_HOME/stacks/<stack>/stack.json), stacks installed on a
cluster and written down in a site config (installed_stack_environment), and what this
machine offers its partitions (scratch, MPI settings, Apptainer). Spack views:
spackviews.py. The command line reaches these only through ReFrame.
"""

import glob
import json
import os
import subprocess

from h5stack.base import paths, settings
from h5stack.base.ui import StepError
from h5stack.stacks.mpi import MPI
from h5stack.stacks.plan import load_config

#: the stacks run with another MPI's library, for the site configs (`./h5stack run --mpi-runtime`)
MPI_RUNTIMES_VARIABLE = "H5STACK_MPI_RUNTIMES"


def reframe_environ_name(stack_name):
    """ReFrame environment names allow only [A-Za-z0-9_-]: mpich-hdf5-1.14 -> mpich-hdf5-1_14."""
    return stack_name.replace(".", "_")


def stacks_by_environ(stack_names):
    """{ReFrame environment name: stack name} of these stacks (what a report shows)."""
    return {reframe_environ_name(n): n for n in stack_names}


class SiteConfigError(StepError):
    """A site config that cannot be used; the message names the file and the reason."""


def this_machine_container_platforms():
    """(container_platforms, features) of this machine's partitions: Apptainer where
    it is on PATH or set up by `./h5stack containers` (with the run settings this machine
    needs, e.g. APPTAINER_DROP_CAPS), else none."""
    from h5stack.machine import apptainer

    exe = apptainer.installed_apptainer()
    if not exe:
        return [], []
    env_vars = [["PATH", f"{os.path.dirname(exe)}:$PATH"]] + [[k, v] for k, v in apptainer.run_env().items()]
    return [{"type": "Apptainer", "env_vars": env_vars}], ["apptainer"]


def container_image(mpi):
    """The image `./h5stack containers build MPI` makes (it may not exist), or None where
    no image carries this MPI (images install Debian's MPIs: one image per family)."""
    from h5stack.machine import images

    return os.path.join(paths.home(), "images", f"h5stack-{mpi}.sif") if mpi in images.FLAVOURS else None


def local_stacks():
    """Descriptions (stack.json) of the local stacks that are set up, sorted by name."""
    result = []
    for path in sorted(glob.glob(os.path.join(paths.home(), "stacks", "*", "stack.json"))):
        try:
            with open(path) as f:
                desc = json.load(f)
        except (OSError, ValueError):
            continue
        if not isinstance(desc.get("tools"), dict) or "origin" not in desc["tools"] or "wrappers" not in desc:
            raise SiteConfigError(f"{path}: written by an older h5stack (no tools origin): run ./h5stack setup")
        result.append(desc)
    return result


def runtime_stacks():
    """Descriptions of the stacks run with another MPI's library that `./h5stack run
    --mpi-runtime` wrote ($H5STACK_MPI_RUNTIMES: directories separated by ':')."""
    from h5stack.stacks import abi

    dirs = [d for d in settings.get(MPI_RUNTIMES_VARIABLE).split(os.pathsep) if d]
    try:
        return abi.descriptions(dirs)
    except StepError as e:
        raise SiteConfigError(str(e)) from None


def _has_multifile(desc):
    """The multifile driver is there: as a package (plugin) or built into libhdf5 (twin)."""
    return desc.get("variant") == "multifile" or any(
        p["name"] == "hdf5-vfd-multifile" for p in desc.get("packages", [])
    )


def _env_vars(mpi, mpi_env_vars):
    """ReFrame env_vars for an MPI: e.g. {'mpich': {'SLURM_MPI_TYPE': 'pmi2'}} (srun's PMI)."""
    return [[k, str(v)] for k, v in (mpi_env_vars or {}).get(mpi, {}).items()]


def local_stack_environments(target_systems, mpi_env_vars=None):
    """One programming environment per local stack, named like the stack with '.'
    replaced by '_' (ReFrame's rule for names): mpich-hdf5-1.14 -> mpich-hdf5-1_14.

    The environment sources the stack's env.sh (what `./h5stack env STACK` prints) and
    compiles with h5pcc. Features let checks select by MPI, HDF5 series and the
    packages built into the stack (e.g. `+hdf5-vfd-multifile`):
    `valid_prog_environs = ['+hdf5-parallel']`, `['+mpich']`, `["+hdf5-2"]`, `["+hdf5-1_14"]`.
    mpi_env_vars: variables per MPI that the system needs (e.g. srun's SLURM_MPI_TYPE).
    """
    envs = []
    mpi_settings = this_machine_mpi_settings()
    series = load_config()["hdf5"]
    for desc in local_stacks() + runtime_stacks():
        known = mpi_settings.get(desc["mpi"], {}).get("mpiio_known_faults")
        testpar_known = mpi_settings.get(desc["mpi"], {}).get("testpar_known") if desc.get("hdf5_testpar") else None
        hdf5_known = hdf5_known_faults(desc["hdf5_series"], series)
        multifile_pkg = [p for p in desc.get("packages", []) if p["name"] == "hdf5-vfd-multifile"]
        envs.append(
            {
                "name": reframe_environ_name(desc["name"]),
                "target_systems": target_systems,
                "prepare_cmds": [f". {os.path.join(desc['stack_dir'], 'env.sh')}"],
                "env_vars": _env_vars(desc["mpi"], mpi_env_vars),
                "cc": "h5pcc",
                "features": [
                    "hdf5-parallel",
                    "local-stack",
                    desc["mpi"],
                    "hdf5-" + desc["hdf5_series"].replace(".", "_"),
                ]
                + [p["name"] for p in desc.get("packages", [])]
                + (["multifile"] if _has_multifile(desc) else [])
                + (["h5py"] if desc.get("python_path") else [])  # parallel h5py, mpi4py, h5vfd
                + (["netcdf"] if any(c["name"] == "netcdf-c" for c in desc.get("clients", [])) else [])
                + (["hdf5-testpar"] if desc.get("hdf5_testpar") else [])  # HDF5's parallel test programs
                + (["netcdf-tests"] if _netcdf_trees(desc) else [])  # netCDF-C's, to compile
                + ([f"variant-{desc['variant']}"] if desc.get("variant") else [])
                + (["mpi-runtime"] if desc.get("abi_runtime") else [])  # another MPI's library
                + (["container-image"] if container_image(desc["mpi"]) else []),  # an image of its MPI
                "extras": {
                    "mpi": desc["mpi"],
                    "mpi_library_signature": desc["mpi_library_signature"],
                    "hdf5_version": desc["hdf5_version"],
                    "hdf5_series": desc["hdf5_series"],
                    "stack": desc["name"],
                    # the HDF5 that the stack's tools (h5dump, h5diff, ...) belong to, and
                    # where they come from: its own build ("build", with h5perf) or Debian's
                    # serial packages ("debian", for a source without tools/: no h5perf)
                    "hdf5_tools_version": desc["tools"]["hdf5_version"],
                    "hdf5_tools_origin": desc["tools"]["origin"],
                }
                # the Apptainer image of this MPI's stacks (reframe-tests/containers)
                | ({"container_image": container_image(desc["mpi"])} if container_image(desc["mpi"]) else {})
                # where H5FDmultifile.h and libh5fd_multifile are (the package; not in a twin)
                | ({"multifile_prefix": multifile_pkg[0]["prefix"]} if multifile_pkg else {})
                # HDF5's testpar programs built with the stack's HDF5 (reframe-tests/hdf5-testpar)
                | ({"hdf5_testpar": desc["hdf5_testpar"]} if desc.get("hdf5_testpar") else {})
                | ({"hdf5_testpar_known": testpar_known} if testpar_known else {})
                # netCDF-C's source and build trees (reframe-tests/netcdf: its parallel tests)
                | _netcdf_trees(desc)
                # faults of the MPI's MPI-IO accepted for now (reframe-tests/mpiio-faults: xfail)
                | ({"mpiio_known_faults": known} if known else {})
                # faults of the HDF5 series accepted for now (reframe-tests/hdf5-faults: xfail)
                | ({"hdf5_known_faults": hdf5_known} if hdf5_known else {}),
            }
        )
    return envs


def _netcdf_trees(desc):
    """{netcdf_source, netcdf_build} of the stack's netCDF-C, where its trees are kept, or {}."""
    for client in desc.get("clients", []):
        if client["name"] == "netcdf-c" and client.get("source_dir") and os.path.isdir(client["source_dir"]):
            return {"netcdf_source": client["source_dir"], "netcdf_build": client["build_dir"]}
    return {}


def detect_fs_type(path):
    """The file-system type at `path` as the checks' job scripts read it: `findmnt -T`,
    else `stat -f` (e.g. in a chroot, where findmnt finds no mount for the path)."""
    for cmd in (["findmnt", "-n", "-o", "FSTYPE", "-T", path], ["stat", "-f", "-c", "%T", path]):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.split()[0]
    return None


def hdf5_known_faults(hdf5_series, series=None):
    """{fault: reason} of an HDF5 series that stacks.yaml accepts (hdf5: SERIES:
    known_faults): the checks of reframe-tests/hdf5-faults are expected failures there."""
    known = ((series or load_config()["hdf5"]).get(hdf5_series) or {}).get("known_faults") or {}
    return {k: str(v) for k, v in known.items()}


def this_machine_mpi_settings():
    """The MPI settings of the machine h5stack runs on, from stacks.yaml (for Spack views
    built with its MPIs): Open MPI oversubscribed, as root; the library signatures; the
    known faults of their MPI-IO and the testpar programs that do not end with them; their
    Spack specs, by which a view's MPI is known."""
    settings = {}
    for name, spec in load_config()["mpis"].items():
        mpi = MPI(name, spec)
        settings[name] = {
            "env": mpi.run_env(),
            "signature": mpi.signature,
            "mpiio_known_faults": mpi.mpiio_known_faults,
            "testpar_known": mpi.testpar_known,
            "spack": spec.get("spack"),
        }
    return settings


def this_machine_scratch():
    """The scratch file system of this machine's partitions: $H5STACK_HOME/scratch, with
    the type of the mount it is on (detected: the system is whatever machine this is)."""
    path = os.path.join(paths.home(), "scratch")
    os.makedirs(path, exist_ok=True)
    fs_type = detect_fs_type(path) or "unknown"
    return {"name": "scratch", "path": path, "type": fs_type, "alignment": 4096}


def this_machine_cluster_scratch(cephfs):
    """The scratch of slurm-cluster's partition: the networked file system that every node
    mounts when the cluster runs with one (`./h5stack cluster start --fs cephfs|glusterfs`;
    cephfs: the site config's entry for a CephFS, its name, layout and alignment), else
    this machine's scratch."""
    from h5stack.machine import cluster

    fs = cluster.running_fs()
    if fs == "cephfs":
        return dict(cephfs, path=cluster.scratch_mountpoint(fs), type=cluster.NETWORKED[fs].FSTYPE)
    if fs == "glusterfs":  # a POSIX file system to the checks: no striping of its own
        return {"name": fs, "path": cluster.scratch_mountpoint(fs), "type": cluster.NETWORKED[fs].FSTYPE}
    return this_machine_scratch()


def _hdf5_series(version):
    """h5stack's series names: 1.14.6 -> 1.14, 2.2.0 -> 2."""
    parts = version.split(".")
    return ".".join(parts[:2]) if parts[0] == "1" else parts[0]


def installed_stack_environment(
    name, target_systems, prefix, mpi, hdf5_version, modules=(), multifile="plugin", env_vars=(), mpi_signature=None
):
    """A programming environment for a stack installed on a cluster (a Spack view or any
    prefix with HDF5 and h5stack's packages), written down instead of read from disk, for
    site configs of systems this machine cannot see. multifile: "plugin" (the
    hdf5-vfd-multifile package in the prefix), "builtin" (a patched HDF5) or None.

    `modules` are loaded by a `module load` line in the job script (the system's
    modules_system stays 'nomod', so the configuration also loads where neither Lmod nor
    Environment Modules exist, e.g. for --dry-run on a workstation).

    `mpi_signature`: a substring of what the MPI's MPI_Get_library_version() prints (the
    checks verify that every run used it); default: stacks.yaml's for an MPI it names."""
    series = _hdf5_series(hdf5_version)
    signature = mpi_signature or load_config()["mpis"].get(mpi, {}).get("library_signature")
    if not signature:
        raise SiteConfigError(f"environment {name!r}: give mpi_signature (stacks.yaml knows no MPI {mpi!r})")
    prepare = [f"module load {' '.join(modules)}"] if modules else []
    prepare += [
        f'export PATH="{prefix}/bin${{PATH:+:$PATH}}"',
        f'export LD_LIBRARY_PATH="{prefix}/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"',
    ]
    # IOR: Spack's builtin `ior +hdf5`, added to the environment by the site
    extras = {
        "mpi": mpi,
        "hdf5_version": hdf5_version,
        "hdf5_series": series,
        "stack": name,
        "ior": f"{prefix}/bin/ior",
        "mpi_library_signature": signature,
    }
    # h5stack's environments install h5pwrite3dc beside HDF5
    features = ["hdf5-parallel", "installed-stack", mpi, "hdf5-" + series.replace(".", "_"), "h5pwrite3dc"]
    if multifile == "plugin":
        prepare.append(f'export HDF5_PLUGIN_PATH="{prefix}/lib/plugin${{HDF5_PLUGIN_PATH:+:$HDF5_PLUGIN_PATH}}"')
        extras["multifile_prefix"] = prefix
        features += ["hdf5-vfd-multifile", "multifile"]
    elif multifile == "builtin":
        features += ["multifile", "variant-multifile"]
    return {
        "name": reframe_environ_name(name),
        "target_systems": target_systems,
        "prepare_cmds": prepare,
        "env_vars": [list(v) for v in env_vars],
        "cc": "h5pcc",
        "features": features,
        "extras": extras,
    }
