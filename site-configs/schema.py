# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""What a system's site configuration must look like, checked before ReFrame starts.

The structure (types, required keys, the keys a file system may have) is a JSON
Schema, validated with `jsonschema`; a violation names the file, the path of keys to
the value and what was expected:

    .../reframe.py: systems[0].partitions[0].extras.filesystems[0].lustre: 8 is not of type 'object'

What a schema cannot say (a unique file-system name, a type that matches its kind,
the kind as a partition feature) is checked after it, in `check_filesystems`.
The reference table of the performance checks a partition takes: extras['references'],
one of reframe-tests/lib/h5checks/references.py's KINDS.
A file system of a partition (extras['filesystems'], read by the checks through
reframe-tests/lib/h5checks/filesystems.py):

    {'name': 'scratch', 'path': '/lus/scratch', 'type': 'lustre',
     'lustre': {'stripe_count': 8, 'stripe_size': '4M'},    # Lustre only
     'gpfs': {'block_size': '16M', 'largeblock_io': True},  # GPFS only
     'cephfs': {'stripe_unit': '1M', 'stripe_count': 2, 'object_size': '4M'},  # CephFS only
     'alignment': '4M', 'mount_options': ['flock'],
     'mpiio_hints': {'romio_cb_write': 'enable', 'striping_factor': '8'}}
"""

import jsonschema

from common import FS_FEATURES, KIND_OF_TYPE, REFERENCE_KINDS, SiteConfigError, fs_kind, size_bytes

SIZE_PATTERN = r"^\s*[0-9]+\s*[KMGkmg]?\s*$"
# "message": what a violation says after the value (our key: jsonschema ignores it)
SIZE = {
    "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": SIZE_PATTERN}],
    "message": "is not a size (bytes, or a number with K, M or G)",
}
NAME = {"type": "string", "minLength": 1}
STRINGS = {"type": "array", "items": {"type": "string"}}

FILESYSTEM = {
    "type": "object",
    "required": ["name", "path", "type"],
    "additionalProperties": False,
    "properties": {
        "name": NAME,
        "path": {"type": "string", "pattern": r"^[/$]", "message": "is not absolute (nor a $VARIABLE)"},
        "type": NAME,
        "kind": {"enum": sorted(FS_FEATURES)},
        "descr": {"type": "string"},
        "mount_options": STRINGS,
        "alignment": SIZE,
        "mpiio_hints": {"type": "object", "additionalProperties": {"type": ["string", "integer"]}},
        "lustre": {
            "type": "object",
            "additionalProperties": False,
            "required": ["stripe_count"],
            "properties": {
                "stripe_count": {
                    "anyOf": [{"const": -1}, {"type": "integer", "minimum": 1}],
                    "message": "is not a stripe count: -1 (all OSTs) or a positive integer",
                },
                "stripe_size": SIZE,
            },
        },
        "gpfs": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"block_size": SIZE, "largeblock_io": {"type": "boolean"}},
        },
        "cephfs": {
            "type": "object",
            "additionalProperties": False,
            "required": ["stripe_unit", "stripe_count", "object_size"],
            "properties": {
                "stripe_unit": SIZE,
                "stripe_count": {"type": "integer", "minimum": 1},
                "object_size": SIZE,
            },
        },
    },
}

PARTITION = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": NAME,
        "environs": STRINGS,
        "features": STRINGS,
        "extras": {
            "type": "object",
            "properties": {
                "filesystems": {"type": "array", "items": FILESYSTEM},
                # the performance checks' reference table for this partition (h5checks/references.py)
                "references": {"enum": list(REFERENCE_KINDS)},
            },
        },
    },
}

SITE_CONFIGURATION = {
    "type": "object",
    "required": ["systems"],
    "properties": {
        "systems": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "partitions"],
                "properties": {"name": NAME, "partitions": {"type": "array", "items": PARTITION}},
            },
        },
        "environments": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": NAME, "target_systems": STRINGS},
            },
        },
    },
}

_VALIDATOR = jsonschema.Draft202012Validator(SITE_CONFIGURATION)


def _key_path(path):
    """deque(['systems', 0, 'partitions']) -> 'systems[0].partitions'"""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text or "site_configuration"


def validate(config, where):
    """Raise SiteConfigError for the first violation of the schema, with its key path."""
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(config))
    if error is not None:
        own = error.schema.get("message") if isinstance(error.schema, dict) else None
        if own is None and error.parent is not None:  # a branch of anyOf: the message of the whole
            own = error.parent.schema.get("message")
        message = f"{error.instance!r} {own}" if own else error.message
        raise SiteConfigError(f"{where}: {_key_path(error.absolute_path)}: {message}")


def check_filesystems(partition, where):
    """What the schema cannot say about a partition's file systems (after validate)."""
    names = set()
    for i, fs in enumerate(partition.get("extras", {}).get("filesystems", [])):
        at = f"{where}: filesystems[{i}]"
        if fs["name"] in names:
            raise SiteConfigError(f"{at}: a second file system named {fs['name']!r}")
        names.add(fs["name"])
        kind = fs_kind(fs)
        if KIND_OF_TYPE.get(fs["type"], "posix") != kind:
            raise SiteConfigError(f"{at}: type {fs['type']!r} is not a {kind} file system")
        if FS_FEATURES[kind] not in partition.get("features", []):
            raise SiteConfigError(
                f"{at}: a {kind} file system, but the partition lacks the feature {FS_FEATURES[kind]!r}"
            )
        if "lustre" in fs and kind != "lustre":
            raise SiteConfigError(f"{at}: Lustre settings on a {fs['type']} file system")
        if "gpfs" in fs and kind != "gpfs":
            raise SiteConfigError(f"{at}: GPFS settings on a {fs['type']} file system")
        if "cephfs" in fs and kind != "cephfs":
            raise SiteConfigError(f"{at}: CephFS settings on a {fs['type']} file system")
        layout = fs.get("cephfs")
        if layout and size_bytes(layout["object_size"]) % size_bytes(layout["stripe_unit"]):
            raise SiteConfigError(f"{at}: CephFS's object_size must be a multiple of its stripe_unit")
        if "alignment" in fs and size_bytes(fs["alignment"]) <= 0:
            raise SiteConfigError(f"{at}: alignment must be positive")
