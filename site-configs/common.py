"""Settings shared by every system's ReFrame configuration.

Each system has `site-configs/<system>/reframe.py`; it imports this module for the
`general` and `logging` sections and for the programming environments of the local
stacks that `./h5stack setup` built ($H5STACK_HOME/stacks/<stack>/stack.json).
"""

import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
from h5stack.stacks import reframe_environ_name  # noqa: E402


def stacks_home():
    return os.path.abspath(os.path.expanduser(os.environ.get("H5STACK_HOME") or os.path.join("~", ".cache", "h5stack")))


def local_stacks():
    """Descriptions (stack.json) of the local stacks that are set up, sorted by name."""
    result = []
    for path in sorted(glob.glob(os.path.join(stacks_home(), "stacks", "*", "stack.json"))):
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


def local_stack_environments(target_systems):
    """One programming environment per local stack, named like the stack with '.'
    replaced by '_' (ReFrame's rule for names): mpich-hdf5-1.14 -> mpich-hdf5-1_14.

    The environment sources the stack's env.sh (what `./h5stack env STACK` prints) and
    compiles with h5pcc. Features let checks select by MPI, HDF5 series and the
    packages built into the stack (e.g. `+hdf5-vfd-multifile`):
    `valid_prog_environs = ['+hdf5-parallel']`, `['+mpich']`, `["+hdf5-2"]`, `["+hdf5-1_14"]`.
    """
    envs = []
    for desc in local_stacks():
        envs.append(
            {
                "name": reframe_environ_name(desc["name"]),
                "target_systems": target_systems,
                "prepare_cmds": [f". {os.path.join(desc['stack_dir'], 'env.sh')}"],
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
                },
            }
        )
    return envs


general = [
    {
        "check_search_path": [os.path.join(os.path.dirname(HERE), "reframe-tests")],
        "check_search_recursive": True,
        "report_file": os.path.join(stacks_home(), "reports", "run-report-{sessionid}.json"),
    }
]

logging = [
    {
        "level": "debug",
        "handlers": [
            {"type": "stream", "name": "stdout", "level": "info", "format": "%(message)s"},
            {
                "type": "file",
                "name": os.path.join(stacks_home(), "logs", "reframe.log"),
                "level": "debug",
                "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
                "append": False,
            },
        ],
        "handlers_perflog": [
            {
                "type": "filelog",
                "prefix": "%(check_system)s/%(check_partition)s",
                "level": "info",
                "format": (
                    "%(check_job_completion_time)s|reframe %(version)s|%(check_info)s|"
                    "jobid=%(check_jobid)s|%(check_perf_var)s=%(check_perf_value)s|"
                    "ref=%(check_perf_ref)s (l=%(check_perf_lower_thres)s, u=%(check_perf_upper_thres)s)|"
                    "%(check_perf_unit)s"
                ),
                "append": True,
            }
        ],
    }
]
