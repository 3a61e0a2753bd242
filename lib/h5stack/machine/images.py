# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""Apptainer images of the local stacks: `./h5stack containers build [mpich|openmpi]`.

One image per MPI flavour (containers/h5stack.def) holds that MPI's stacks (HDF5
1.14 and 2.x, plain and patched, with h5stack's packages). The stacks come from the
same builder as outside: they are set up on this machine (`Stacks.setup`), then
exported relocatable into one directory per stack, /opt/h5stack/<stack> in the image:

- each stack's prefixes (HDF5 first, then the packages on top) are merged into one tree;
- ELF files get a RUNPATH relative to themselves (patchelf: $ORIGIN/../lib for
  programs, $ORIGIN for libraries, $ORIGIN/.. for plugins), so no LD_LIBRARY_PATH is
  needed and the host's install paths mean nothing inside the image;
- text files naming a host prefix (h5pcc, pkg-config and CMake files) name the
  stack's directory in the image instead;
- the stack's wrappers of programs outside its prefixes (a 2.x stack built from the
  crate: HDF5's tools from Debian's packages; patched twins: h5mf of the base stack)
  become wrappers of the same program in the image;
- a tree of Debian's HDF5 tools (lib/h5stack/stacks/debtools.py) is copied as it is, to
  /opt/h5stack/<its name>: its launchers find it from their own path and it brings its
  own loader and libraries (no RUNPATH to set).

The image's base is a Debian 12 made with debootstrap (apptainer.ensure_base: offline,
no registry) unless --base docker://... is given. Images are cached in images/ keyed by
the definition, the exported trees, the base and Apptainer's version; images/
h5stack-<mpi>.sif always names the newest one. Exports go to images/export/<mpi>/.
"""

import hashlib
import json
import os
import shutil
import subprocess
import time

from h5stack.base import paths
from h5stack.base.ui import StepError, fmt_seconds, info, run_logged
from h5stack.machine import apptainer
from h5stack.stacks import build, plan, stackdir

#: an image per Debian MPI of stacks.yaml (the image installs its Debian packages)
FLAVOURS = tuple(n for n, spec in plan.load_config()["mpis"].items() if spec.get("debian_packages"))
DEFINITION = os.path.join(paths.ROOT, "containers", "h5stack.def")
TUTORIAL_SOURCES = os.path.join(paths.REFRAME_TESTS, "hdf5-tutorial", "src")
IMAGE_ROOT = "/opt/h5stack"  # where the stacks live inside the image


def image_link(flavour):
    """The stable name of the newest image of a flavour (what checks and users run)."""
    return os.path.join(paths.sub("images"), f"h5stack-{flavour}.sif")


def flavour_stacks(registry, flavour):
    """The stacks of one MPI, bases before the twins that borrow from them."""
    stacks = [s for s in registry.all() if s.mpi.name == flavour]
    if not stacks:
        raise StepError(f"no stacks with the MPI {flavour!r} in stacks.yaml (flavours: {', '.join(FLAVOURS)})")
    return registry.needed_stacks(stacks)


# -- exporting stacks -------------------------------------------------------------
def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def runpath_for(rel):
    """The RUNPATH of an ELF file at rel (relative to the stack's root)."""
    parts = rel.split(os.sep)
    if parts[:2] == ["lib", "plugin"]:
        return "$ORIGIN/.."
    if parts[0] == "lib":
        return "$ORIGIN"
    return "$ORIGIN/../lib"


def rewrite_text(path, replacements):
    """Replace host prefixes in a text file (binary files are left alone)."""
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data:
        return False
    new = data
    for old, repl in replacements:
        new = new.replace(old.encode(), repl.encode())
    if new == data:
        return False
    with open(path, "wb") as f:
        f.write(new)
    return True


def export_stack(desc, dest, prefix_map, patchelf="patchelf"):
    """Merge a set-up stack (its stack.json description) into dest, relocatable to
    IMAGE_ROOT/<stack>; prefix_map: every exported host prefix -> its stack's directory
    in the image (for this stack's own prefixes and those it borrows from)."""
    name = desc["name"]
    if os.path.exists(dest):
        shutil.rmtree(dest)
    for prefix in reversed(desc["prefixes"]):  # HDF5 first, the packages on top
        shutil.copytree(prefix, dest, symlinks=True, dirs_exist_ok=True)
    manifest = os.path.join(dest, build.MANIFEST)
    if os.path.exists(manifest):
        os.remove(manifest)
    replacements = sorted(prefix_map.items(), key=lambda kv: -len(kv[0]))  # longest first
    for dirpath, _dirs, files in os.walk(dest):
        for fname in files:
            full = os.path.join(dirpath, fname)
            if os.path.islink(full):
                continue
            rel = os.path.relpath(full, dest)
            if is_elf(full):
                proc = subprocess.run([patchelf, "--print-rpath", full], capture_output=True, text=True)
                if proc.returncode == 0:  # executables and shared objects (not object files)
                    os.chmod(full, os.stat(full).st_mode | 0o200)
                    subprocess.run([patchelf, "--set-rpath", runpath_for(rel), full], check=True)
            else:
                rewrite_text(full, replacements)
    # the stack's own wrappers: MPI commands stay as they are (the image has the same
    # Debian MPI in /usr/bin); programs of another exported tree point into the image
    for wrapper in desc["wrappers"]:
        tool, target = wrapper["name"], wrapper["target"]
        if target.startswith("/usr/"):
            continue
        for host, image in replacements:
            if target.startswith(host + "/"):
                target = image + target[len(host) :]
                break
        else:
            raise StepError(f"{name}: {tool} wraps {target}, which is in no exported tree")
        stackdir.write_wrapper(os.path.join(dest, "bin", tool), target, wrapper["env"])
    return dest


def debian_tools_trees(descs):
    """The trees of Debian's HDF5 tools that these stacks (stack.json descriptions) run."""
    return sorted({d["tools"]["prefix"] for d in descs if d["tools"].get("origin") == "debian"})


def export_tree(tree, dest):
    """Copy a tree of Debian's HDF5 tools to dest as it is (links kept), without the build
    cache's manifest."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(tree, dest, symlinks=True)
    os.remove(os.path.join(dest, build.MANIFEST))
    return dest


def export_flavour(registry, flavour, dest):
    """Export every stack of one MPI (set up already) into dest/<stack>: the stacks (Stack)
    and a summary of each."""
    stacks = flavour_stacks(registry, flavour)
    descs = [s.description() for s in stacks]
    # every host prefix (HDF5's among them) -> its stack's directory in the image; a tree
    # of Debian's HDF5 tools -> its own directory
    prefix_map = {prefix: f"{IMAGE_ROOT}/{d['name']}" for d in descs for prefix in d["prefixes"]}
    trees = debian_tools_trees(descs)
    prefix_map |= {tree: f"{IMAGE_ROOT}/{os.path.basename(tree)}" for tree in trees}
    os.makedirs(dest, exist_ok=True)
    for entry in os.listdir(dest):  # the previous export
        path = os.path.join(dest, entry)
        shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
    for tree in trees:
        export_tree(tree, os.path.join(dest, os.path.basename(tree)))
    for desc in descs:
        export_stack(desc, os.path.join(dest, desc["name"]), prefix_map)
    summary = [{k: d[k] for k in ("name", "hdf5_version", "mpi", "mpi_version", "hdf5_source")} for d in descs]
    with open(os.path.join(dest, "stacks.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return stacks, summary


# -- building images ----------------------------------------------------------------
def commit_of_checkout():
    proc = subprocess.run(["git", "-C", paths.ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", paths.ROOT, "status", "--porcelain"], capture_output=True, text=True)
    commit = proc.stdout.strip() if proc.returncode == 0 else "unknown"
    return commit + ("-dirty" if dirty.stdout.strip() else "")


def mpi_packages(flavour):
    """{role: "pkg pkg"}: the Debian packages of an MPI (stacks.yaml `debian_packages`)."""
    lists = plan.load_config()["mpis"][flavour]["debian_packages"]
    return {role: " ".join(lists[role]) for role in ("build", "run")}


def build_args(flavour, base, export_dir, commit):
    bootstrap, _, source = base.partition("://") if "://" in base else ("localimage", "", base)
    packages = mpi_packages(flavour)
    return {
        "BOOTSTRAP": bootstrap,
        "BASE": source,
        "MPI": flavour,
        "MPI_BUILD_PACKAGES": packages["build"],
        "MPI_RUN_PACKAGES": packages["run"],
        "EXPORT": export_dir,
        "TUTORIAL": TUTORIAL_SOURCES,
        "COMMIT": commit,
    }


def image_key(definition_text, args, export_sha, base_key, apptainer_version):
    # paths on this machine do not change what is in the image: the contents do
    stable = {k: v for k, v in args.items() if k not in ("EXPORT", "TUTORIAL", "COMMIT")}
    blob = json.dumps(
        {
            "definition": definition_text,
            "args": stable,
            "export": export_sha,
            "tutorial": build.tree_sha256(TUTORIAL_SOURCES),
            "base": base_key,
            "apptainer": apptainer_version,
        },
        sort_keys=True,
    ).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def build_image(flavour, base=None, force=False, registry=None):
    """The image of one flavour (cached): its path. registry: the Stacks, set up already
    (by default they are set up here)."""

    if flavour not in FLAVOURS:
        raise StepError(f"unknown flavour {flavour!r} (expected one of {', '.join(FLAVOURS)})")
    apptainer.ensure_packages()  # requirements/debian-containers.txt (patchelf too)
    exe = apptainer.ensure_apptainer()
    apptainer.ensure_subids()
    if base is None:
        base = apptainer.ensure_base()
        base_key = os.path.basename(os.path.dirname(base))
    else:
        base_key = base
    images = paths.sub("images")
    if registry is None:
        registry = plan.Stacks()
        registry.setup(flavour_stacks(registry, flavour))
    work = paths.sub("images", "export", flavour)
    export_dir = os.path.join(work, "stacks")
    with paths.locked(f"image-{flavour}"):
        stacks, _summary = export_flavour(registry, flavour, export_dir)
        names = ", ".join(s.name for s in stacks)
        version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
        with open(DEFINITION) as f:
            definition = f.read()
        args = build_args(flavour, base, export_dir, commit_of_checkout())
        key = image_key(definition, args, build.tree_sha256(export_dir), base_key, version)
        image = os.path.join(images, f"h5stack-{flavour}-{key}.sif")
        link = image_link(flavour)
        if os.path.isfile(image) and not force:
            info(f"image {flavour}: cached ({image})")
        else:
            arg_file = os.path.join(work, "build-args")
            with open(arg_file, "w") as f:
                f.writelines(f"{k}={v}\n" for k, v in args.items())
            partial = image + ".part"
            info(f"image {flavour}: building {os.path.basename(image)} ({names}) from {base}")
            t0 = time.monotonic()
            env = {**os.environ, **apptainer.run_env(), "APPTAINER_TMPDIR": paths.sub("images", "tmp")}
            cmd = [exe, "build", "--fakeroot", "--force", "--build-arg-file", arg_file, partial, DEFINITION]
            run_logged(cmd, paths.log_file(f"image-{flavour}.log"), f"image {flavour}", cwd=work, env=env)
            os.replace(partial, image)
            info(f"image {flavour}: built in {fmt_seconds(time.monotonic() - t0)}, "
                 f"{os.path.getsize(image) / 1e6:.0f} MB: {image}")  # fmt: skip
        tmp_link = link + ".tmp"
        if os.path.lexists(tmp_link):
            os.remove(tmp_link)
        os.symlink(os.path.basename(image), tmp_link)
        os.replace(tmp_link, link)
        for old in os.listdir(images):  # older images of this flavour
            if old.startswith(f"h5stack-{flavour}-") and old.endswith(".sif") and old != os.path.basename(image):
                os.remove(os.path.join(images, old))
    return link


def flavours_of(stacks):
    """The image flavours (MPIs) that these stacks ask for."""
    return [f for f in FLAVOURS if any(s.mpi.name == f for s in stacks)]


def can_build():
    """Can this user build images (root, or a user with subordinate ids)?"""
    return os.geteuid() == 0 or apptainer.ensure_subids()


def prepare_tools():
    """Install the Debian packages the images need (here, now); return what makes the
    rest of their tools, Apptainer and the base (each made once, cached), to be run later
    or beside other work."""
    apptainer.ensure_packages()

    def make():
        apptainer.ensure_apptainer()
        apptainer.ensure_base()

    return make


def setup_images(registry, stacks=None):
    """What `run` and `test` do before the checks, after setting up these stacks (Stack;
    default: all): the images of their MPIs, cached. Where this user cannot build images (not
    root and no subordinate ids), says so and builds none: the container checks then skip."""
    stacks = stacks or registry.all()
    flavours = flavours_of(stacks)
    if not can_build():
        info("containers: no images built (needs root, or subordinate ids for `apptainer build --fakeroot`)")
        return []
    others = [s for f in flavours for s in flavour_stacks(registry, f) if s not in stacks]  # an image holds them all
    if others:
        registry.setup(others)
    return [build_image(f, registry=registry) for f in flavours]
