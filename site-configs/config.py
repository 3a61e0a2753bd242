# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""All systems in one ReFrame configuration: loads site-configs/<system>/reframe.py of
every system, checks each one, and merges them (the CSCS pattern: one file per system,
a small loader).

    reframe -C site-configs/config.py --system slurm-local -r      (./h5stack run does this)

A system's file defines `site_configuration` with exactly one system, named like its
folder, and the programming environments it uses. The loader rejects a malformed
file with its path and the reason (SiteConfigError), before ReFrame starts:
- the system's name differs from its folder, or there is not exactly one system;
- a partition lists an environment that no environment definition provides;
- the configuration breaks its schema (schema.py: the types and keys of systems,
  partitions, environments and file systems, validated with jsonschema), or a
  partition's file systems what the schema cannot say (schema.check_filesystems: a
  type that matches its kind, the kind as a partition feature, unique names).
"""

import glob
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(HERE)
import common  # noqa: E402
import schema  # noqa: E402
from common import SiteConfigError  # noqa: E402


def _provides(environment, name, system, partition):
    targets = environment.get("target_systems", ["*"])
    return environment["name"] == name and any(t in ("*", system, f"{system}:{partition}") for t in targets)


def load_system(path):
    """The `site_configuration` of one system file, checked."""
    folder = os.path.basename(os.path.dirname(path))
    # a module name of our own per system: every system's file is named reframe.py, and
    # ReFrame's import_module_from_file would name one outside the working directory
    # `reframe`, the name of ReFrame's own package
    spec = importlib.util.spec_from_file_location(f"h5stack_site_{folder.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SiteConfigError:
        raise
    except Exception as e:  # a syntax or import error: say which file
        raise SiteConfigError(f"{path}: cannot be loaded: {type(e).__name__}: {e}") from e
    config = getattr(module, "site_configuration", None)
    if not isinstance(config, dict):
        raise SiteConfigError(f"{path}: defines no `site_configuration` dictionary")
    if not isinstance(config.get("systems"), list) or len(config["systems"]) != 1:
        raise SiteConfigError(f"{path}: `systems` must list exactly one system (the one of this folder)")
    schema.validate(config, path)
    system = config["systems"][0]
    if system.get("name") != folder:
        raise SiteConfigError(f"{path}: the system is named {system.get('name')!r}, its folder {folder!r}")
    environments = config.get("environments", [])
    for part in system.get("partitions", []):
        where = f"{path}: system {folder!r}, partition {part.get('name')!r}"
        for env in part.get("environs", []):
            if not any(_provides(e, env, folder, part.get("name")) for e in environments):
                raise SiteConfigError(f"{where}: environment {env!r} is not defined for this system")
        schema.check_filesystems(part, where)
    return config


def load_all(root=HERE):
    """Every system under `root`, merged: systems in folder order, all environments."""
    systems, environments = [], []
    for path in sorted(glob.glob(os.path.join(root, "*", "reframe.py"))):
        config = load_system(path)
        systems += config["systems"]
        environments += config.get("environments", [])
    if not systems:
        raise SiteConfigError(f"{root}: no site-configs/<system>/reframe.py found")
    return {
        "systems": systems,
        "environments": environments,
        "general": common.general,
        "logging": common.logging,
    }


site_configuration = load_all()
