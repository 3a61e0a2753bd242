"""Settings shared by every system's ReFrame configuration.

Each system has `site-configs/<system>/reframe.py`; it imports this module for the
`general` and `logging` sections and for its programming environments: those of the
local stacks that `./h5stack setup` built ($H5STACK_HOME/stacks/<stack>/stack.json) and
those of installed Spack environments (their views; see spack_view_environments).
"""

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "reframe-tests", "lib"))  # h5checks.fskinds
from h5stack import paths, perflog  # noqa: E402
from h5stack.stacks import MPI, load_config, reframe_environ_name  # noqa: E402


def this_machine_container_platforms():
    """(container_platforms, features) of this machine's partitions: Apptainer where
    it is on PATH or built by `./h5stack containers` (with the run settings this machine
    needs, e.g. APPTAINER_DROP_CAPS), else none."""
    from h5stack import apptainer

    exe = shutil.which("apptainer")
    if not exe:
        built = sorted(glob.glob(os.path.join(paths.home(), "opt", "apptainer-*", "bin", "apptainer")))
        exe = built[-1] if built else None
    if not exe:
        return [], []
    env_vars = [["PATH", f"{os.path.dirname(exe)}:$PATH"]] + [[k, v] for k, v in apptainer.run_env().items()]
    return [{"type": "Apptainer", "env_vars": env_vars}], ["apptainer"]


def container_image(mpi):
    """The image `./h5stack containers build MPI` makes (it may not exist)."""
    return os.path.join(paths.home(), "images", f"h5stack-{mpi}.sif")


def local_stacks():
    """Descriptions (stack.json) of the local stacks that are set up, sorted by name."""
    result = []
    for path in sorted(glob.glob(os.path.join(paths.home(), "stacks", "*", "stack.json"))):
        try:
            with open(path) as f:
                result.append(json.load(f))
        except (OSError, ValueError):
            continue
    return result


def _has_multifile(desc):
    """The multifile driver is there: as a package (plugin) or built into libhdf5 (twin)."""
    return desc.get("variant") == "multifile" or any(
        p["name"] == "hdf5-vfd-multifile" for p in desc.get("packages", [])
    )


def _tools_version(desc):
    """The HDF5 version of a local stack's tools: its own, or the series it borrows them from."""
    m = re.match(r"HDF5 (\S+)", desc.get("tools", ""))
    return m.group(1) if m else desc["hdf5_version"]


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
    for desc in local_stacks():
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
                + ([f"variant-{desc['variant']}"] if desc.get("variant") else []),
                "extras": {
                    "mpi": desc["mpi"],
                    "mpi_library_signature": desc["mpi_library_signature"],
                    "hdf5_version": desc["hdf5_version"],
                    "hdf5_series": desc["hdf5_series"],
                    "stack": desc["name"],
                    # the HDF5 that the stack's tools (h5dump, h5perf, ...) belong to
                    "hdf5_tools_version": _tools_version(desc),
                    # the Apptainer image of this MPI's stacks (reframe-tests/containers)
                    "container_image": container_image(desc["mpi"]),
                }
                # where H5FDmultifile.h and libh5fd_multifile are (the package; not in a twin)
                | ({"multifile_prefix": multifile_pkg[0]["prefix"]} if multifile_pkg else {}),
            }
        )
    return envs


class SiteConfigError(Exception):
    """A site config that cannot be used; the message names the file and the reason."""


# File systems of a partition: extras['filesystems'], a list of
#   {'name': 'scratch',                    # a label (test names, perflogs)
#    'path': '/lus/scratch/$USER/h5stack', # where checks write ($VARS expanded on the node)
#    'type': 'lustre',                     # what `findmnt -T PATH` must report there
#    'kind': 'lustre' | 'gpfs' | 'posix',  # optional: derived from the type
#    'mount_options': ['flock'],           # optional: must be among the mount's options
#    'lustre': {'stripe_count': 8, 'stripe_size': '4M'},          # lfs setstripe on the directory
#    'gpfs': {'block_size': '16M', 'largeblock_io': True},        # IBM_largeblock_io hint
#    'alignment': 4194304,                 # H5Pset_alignment(fapl, threshold, alignment)
#    'mpiio_hints': {'romio_cb_write': 'enable', 'striping_factor': '8'}}   # a ROMIO hints file
# The kind is also a partition feature: valid_systems = ['+lustre'], ['+gpfs'], ['+posixfs'].
from h5checks.fskinds import FS_FEATURES, KIND_OF_TYPE, fs_kind, size_bytes  # noqa: E402,F401  (one source)


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


def this_machine_mpi_settings():
    """The MPI settings of the machine h5stack runs on, from stacks.yaml (for Spack views
    built with its MPIs): Open MPI oversubscribed, as root; the library signatures."""
    mpis = [MPI(name, spec) for name, spec in load_config()["mpis"].items()]
    return {mpi.name: {"env": mpi.run_env(), "signature": mpi.signature} for mpi in mpis}


def this_machine_scratch():
    """The scratch file system of this machine's partitions: $H5STACK_HOME/scratch, with
    the type of the mount it is on (detected: the system is whatever machine this is)."""
    path = os.path.join(paths.home(), "scratch")
    os.makedirs(path, exist_ok=True)
    fs_type = detect_fs_type(path) or "unknown"
    return {"name": "scratch", "path": path, "type": fs_type, "alignment": 4096}


SPACK_ENVS_VARIABLE = "H5STACK_SPACK_ENVS"


def spack_environment_dirs():
    """The Spack environments (directories) named in $H5STACK_SPACK_ENVS, separated by ':'
    (what `./h5stack run --spack-env DIR` sets)."""
    return [d for d in os.environ.get(SPACK_ENVS_VARIABLE, "").split(os.pathsep) if d]


class SpackViewError(Exception):
    pass


def _view_specs(view_root):
    """{package name: its node in the view's .spack/<name>/spec.json} of a Spack view."""
    nodes = {}
    for path in sorted(glob.glob(os.path.join(view_root, ".spack", "*", "spec.json"))):
        with open(path) as f:
            spec = json.load(f)["spec"]
        root = spec["nodes"][0]
        root["_by_hash"] = {n["hash"]: n for n in spec["nodes"]}
        nodes[root["name"]] = root
    return nodes


def _dependency(node, virtual):
    """The node that provides `virtual` (e.g. mpi) to `node`."""
    for dep in node.get("dependencies", []):
        if virtual in dep.get("parameters", {}).get("virtuals", []) or dep["name"] == virtual:
            return node["_by_hash"].get(dep["hash"])
    return None


def _install_prefix(node, near):
    """An installed spec's prefix: external path, or <install tree>/.../<name>-<version>-<hash>
    beside the installed prefix `near` (Spack's default projection)."""
    if node.get("external"):
        return node["external"]["path"]
    tree = os.path.dirname(os.path.realpath(near))
    found = glob.glob(os.path.join(tree, f"{node['name']}-*-{node['hash']}"))
    return found[0] if found else None


def _hdf5_series(version):
    """h5stack's series names: 1.14.6 -> 1.14, 2.2.0 -> 2."""
    parts = version.split(".")
    return ".".join(parts[:2]) if parts[0] == "1" else parts[0]


def spack_views(env_dir):
    """The views of an installed Spack environment: [(view name, view root)], default first.

    Reads the environment's spack.yaml (`view:` true, a path, or named views with `root:`).
    """
    manifest = os.path.join(env_dir, "spack.yaml")
    try:
        with open(manifest) as f:
            config = (yaml.safe_load(f) or {}).get("spack", {})
    except OSError as e:
        raise SpackViewError(f"{manifest}: not a Spack environment ({e.strerror})") from None
    view = config.get("view", True)
    if view is True:
        views = {"default": os.path.join(env_dir, ".spack-env", "view")}
    elif isinstance(view, str):
        views = {"default": view}
    elif isinstance(view, dict):
        views = {name: v["root"] if isinstance(v, dict) else v for name, v in view.items()}
    else:
        raise SpackViewError(f"{manifest}: the environment has no view (view: {view!r})")
    views = {n: os.path.normpath(os.path.join(env_dir, r)) for n, r in views.items()}
    return sorted(views.items(), key=lambda nv: (nv[0] != "default", nv[0]))


def spack_view_environments(target_systems, env_dirs, mpi_settings=None, mpi_env_vars=None):
    """One programming environment per view of each installed Spack environment, named
    `spack-<environment>` (its default view) or `spack-<environment>-<view>`, '.' -> '_':
    environments/mpich-hdf5-1.14 -> spack-mpich-hdf5-1_14 and spack-mpich-hdf5-1_14-multifile.

    The environment puts the view (and, after it, the environment's other views: h5mf
    for the patched HDF5's view) on PATH and LD_LIBRARY_PATH, the MPI that HDF5 was built
    with first on PATH (external MPIs are not linked into views), prepends the view's
    plugin directory (if any) to HDF5_PLUGIN_PATH, and compiles with the view's h5pcc. Features and extras are those of
    the local stacks (read from the view's spec.json files), plus `spack-view`.

    mpi_settings: {mpi name: {"env": {VAR: value}, "signature": text}} (e.g. Open MPI's
    settings for this machine, from stacks.yaml); mpi_env_vars as for local stacks.
    """
    mpi_settings = mpi_settings or {}
    envs = []
    for env_dir in env_dirs:
        env_dir = os.path.abspath(os.path.expanduser(env_dir))
        env_name = os.path.basename(env_dir.rstrip(os.sep))
        views = spack_views(env_dir)
        all_bins = [os.path.join(root, "bin") for _, root in views]
        for view_name, root in views:
            specs = _view_specs(root)
            hdf5 = specs.get("hdf5")
            if hdf5 is None:
                raise SpackViewError(
                    f"{root}: no HDF5 in this view of {env_dir} (not installed? run `spack -e {env_dir} install`)"
                )
            mpi = _dependency(hdf5, "mpi")
            if mpi is None:
                raise SpackViewError(f"{root}: the view's HDF5 is not built with MPI (hdf5~mpi)")
            mpi_prefix = _install_prefix(mpi, os.path.join(root, "bin", "h5pcc"))
            if mpi_prefix is None:
                raise SpackViewError(f"{root}: cannot find the prefix of {mpi['name']}/{mpi['hash'][:7]}")
            series = _hdf5_series(hdf5["version"])
            name = f"spack-{env_name}" + ("" if view_name == "default" else f"-{view_name}")
            settings = mpi_settings.get(mpi["name"], {})
            bins = [os.path.join(root, "bin")] + [b for b in all_bins if b != os.path.join(root, "bin")]
            path = ":".join([os.path.join(mpi_prefix, "bin")] + bins)
            prepare = [
                f'export PATH="{path}${{PATH:+:$PATH}}"',
                f'export LD_LIBRARY_PATH="{root}/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"',
                f'export CMAKE_PREFIX_PATH="{root}${{CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}}"',
            ]
            if os.path.isdir(os.path.join(root, "lib", "plugin")):
                prepare.append(f'export HDF5_PLUGIN_PATH="{root}/lib/plugin${{HDF5_PLUGIN_PATH:+:$HDF5_PLUGIN_PATH}}"')
            prepare += [f"export {k}={shlex.quote(str(v))}" for k, v in settings.get("env", {}).items()]
            packages = sorted(n for n in specs if n.startswith("hdf5-") or n == "h5pwrite3dc")
            multifile = bool(hdf5.get("parameters", {}).get("multifile")) or "hdf5-vfd-multifile" in packages
            extras = {
                "mpi": mpi["name"],
                "hdf5_version": hdf5["version"],
                "hdf5_series": series,
                "stack": name,
                "spack_environment": env_dir,
                "spack_view": root,
            }
            if "hdf5-vfd-multifile" in packages:
                extras["multifile_prefix"] = root
            if os.path.isfile(os.path.join(root, "bin", "ior")):  # `ior +hdf5` in the environment
                extras["ior"] = os.path.join(root, "bin", "ior")
            if settings.get("signature"):
                extras["mpi_library_signature"] = settings["signature"]
            envs.append(
                {
                    "name": reframe_environ_name(name),
                    "target_systems": target_systems,
                    "prepare_cmds": prepare,
                    "env_vars": _env_vars(mpi["name"], mpi_env_vars),
                    "cc": "h5pcc",
                    "features": ["hdf5-parallel", "spack-view", mpi["name"], "hdf5-" + series.replace(".", "_")]
                    + packages
                    + (["multifile"] if multifile else [])
                    + (["variant-multifile"] if hdf5.get("parameters", {}).get("multifile") else []),
                    "extras": extras,
                }
            )
    return envs


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


general = [
    {
        "check_search_path": [os.path.join(os.path.dirname(HERE), "reframe-tests")],
        "check_search_recursive": True,
        "report_file": os.path.join(paths.home(), "reports", "run-report-{sessionid}.json"),
    }
]

logging = [
    {
        "level": "debug",
        "handlers": [
            {"type": "stream", "name": "stdout", "level": "info", "format": "%(message)s"},
            {
                "type": "file",
                "name": os.path.join(paths.home(), "logs", "reframe.log"),
                "level": "debug",
                "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
                "append": False,
            },
        ],
        # one line per test in the layout of h5stack.perflog: what `./h5stack report` reads
        "handlers_perflog": [
            {
                "type": "filelog",
                "prefix": "%(check_system)s/%(check_partition)s",
                "level": "info",
                **perflog.reframe_format(),
                "append": True,
            }
        ],
    }
]
