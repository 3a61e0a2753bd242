# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The Apptainer images of the stacks (lib/h5stack/machine/images.py, containers/h5stack.def).

Unit tests of the export (a stack merged into one relocatable tree: RUNPATHs, host
prefixes in text files, wrappers of programs in other exported trees; a tree of Debian's
HDF5 tools copied as it is) and of the image key; then, as root, the
real images that `./h5stack test` builds before the tests (cached): their labels, and
both run models for each MPI — inside the image (its own mpiexec) and hybrid (this
machine's mpiexec of the same MPI starts one container per rank) — checked against a
file written outside the image by the stack's own HDF5 (h5diff)."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import Stacks, in_stack
from h5stack.machine import apptainer, images
from h5stack.stacks import stackdir

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="images are built with --fakeroot as root here")


def fake_stack(tmp_path):
    """A set-up stack as stack.json describes it: an HDF5 prefix, a package prefix, and a
    stack bin/ with an MPI wrapper, a wrapper of a tool of a tree of Debian's HDF5 tools and
    one of a twin's program of its base stack."""
    hdf5 = tmp_path / "opt" / "hdf5-x"
    pkg = tmp_path / "opt" / "pkg-x"
    tools = tmp_path / "opt" / "debian-hdf5-tools-x"
    base = tmp_path / "opt" / "pkg-base"
    for d in (hdf5 / "bin", hdf5 / "lib" / "pkgconfig", pkg / "bin", pkg / "lib" / "plugin", tools / "bin",
              tools / "root" / "usr" / "bin", base / "bin"):  # fmt: skip
        d.mkdir(parents=True)
    shutil.copy("/bin/true", hdf5 / "bin" / "h5prog")  # an ELF program
    (hdf5 / "lib" / "pkgconfig" / "hdf5.pc").write_text(f"prefix={hdf5}\nlibdir=${{prefix}}/lib\n")
    (hdf5 / "bin" / "h5cc").write_text(f"#!/bin/sh\nprefix={hdf5}\n")
    (hdf5 / ".h5stack-manifest.json").write_text("{}")
    (pkg / "bin" / "tool").write_text(f"#!/bin/sh\nexec {pkg}/bin/real\n")
    (pkg / "lib" / "libp.so").write_bytes(b"not really a library, but \0 binary")
    os.symlink("../libp.so", pkg / "lib" / "plugin" / "libp.so")
    shutil.copy("/bin/true", tools / "root" / "usr" / "bin" / "h5dump")  # Debian's program
    (tools / "bin" / "h5dump").write_text('#!/bin/sh\nroot=${0%/*}/../root\nexec "$root/usr/bin/h5dump" "$@"\n')
    (tools / "bin" / "h5dump").chmod(0o755)
    (tools / ".h5stack-manifest.json").write_text("{}")
    stack_dir = tmp_path / "stacks" / "mpich-hdf5-x"
    (stack_dir / "bin").mkdir(parents=True)
    wrappers = [
        stackdir.write_wrapper(stack_dir / "bin" / "mpicc", "/usr/bin/mpicc.mpich"),
        stackdir.write_wrapper(stack_dir / "bin" / "h5dump", f"{tools}/bin/h5dump"),
        stackdir.write_wrapper(stack_dir / "bin" / "h5mf", f"{base}/bin/h5mf", lender="mpich-hdf5-base"),
    ]
    desc = {
        "name": "mpich-hdf5-x",
        "prefixes": [str(pkg), str(hdf5)],
        "stack_dir": str(stack_dir),
        "wrappers": wrappers,
        "tools": {"origin": "debian", "prefix": str(tools)},
    }
    prefix_map = {str(hdf5): "/opt/h5stack/mpich-hdf5-x", str(pkg): "/opt/h5stack/mpich-hdf5-x",
                  str(base): "/opt/h5stack/mpich-hdf5-base",
                  str(tools): "/opt/h5stack/debian-hdf5-tools-x"}  # fmt: skip
    return desc, prefix_map


def exec_in_image(image, argv, app=None, env=None, cwd=None, timeout=600):
    """Run argv inside an image (apptainer exec), with this machine's run settings."""
    exe = apptainer.ensure_apptainer()
    cmd = [exe, "exec"] + (["--app", app] if app else []) + [image, *argv]
    return subprocess.run(
        cmd, env={**os.environ, **apptainer.run_env(), **(env or {})}, cwd=cwd, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


@pytest.mark.skipif(not shutil.which("patchelf"), reason="patchelf is installed by `./h5stack containers`")
def test_export_makes_a_relocatable_tree(tmp_path):
    desc, prefix_map = fake_stack(tmp_path)
    out = tmp_path / "export" / "mpich-hdf5-x"
    images.export_stack(desc, str(out), prefix_map)
    # prefixes merged, the manifest of the build cache left out, links kept
    assert sorted(os.listdir(out / "bin")) == ["h5cc", "h5dump", "h5mf", "h5prog", "tool"]
    assert not (out / ".h5stack-manifest.json").exists()
    assert os.readlink(out / "lib" / "plugin" / "libp.so") == "../libp.so"
    # host prefixes in text files name the stack's place in the image
    assert (out / "lib" / "pkgconfig" / "hdf5.pc").read_text().startswith("prefix=/opt/h5stack/mpich-hdf5-x\n")
    assert (out / "bin" / "tool").read_text() == "#!/bin/sh\nexec /opt/h5stack/mpich-hdf5-x/bin/real\n"
    assert str(tmp_path) not in (out / "bin" / "h5cc").read_text()
    # binary files are left alone; ELF programs find their libraries relative to themselves
    assert (out / "lib" / "libp.so").read_bytes() == b"not really a library, but \0 binary"
    rpath = subprocess.run(["patchelf", "--print-rpath", str(out / "bin" / "h5prog")], capture_output=True, text=True)
    assert rpath.stdout.strip() == "$ORIGIN/../lib"
    assert subprocess.run([str(out / "bin" / "h5prog")]).returncode == 0  # still runs
    # programs of other exported trees point into the image; MPI wrappers are not copied
    assert (
        out / "bin" / "h5dump"
    ).read_text() == '#!/bin/sh\nexec "/opt/h5stack/debian-hdf5-tools-x/bin/h5dump" "$@"\n'
    assert (out / "bin" / "h5mf").read_text() == '#!/bin/sh\nexec "/opt/h5stack/mpich-hdf5-base/bin/h5mf" "$@"\n'
    assert not (out / "bin" / "mpicc").exists()


def test_a_tree_of_debian_tools_is_exported_as_it_is(tmp_path):
    """Its launchers find it from their own path and it brings its own loader: copied
    unchanged (no RUNPATH set, no text rewritten), without the build cache's manifest."""
    desc, _ = fake_stack(tmp_path)
    tree = tmp_path / "opt" / "debian-hdf5-tools-x"
    assert images.debian_tools_trees([desc, {"tools": {"origin": "build", "prefix": "/x"}}]) == [str(tree)]
    out = images.export_tree(str(tree), str(tmp_path / "export" / tree.name))
    assert sorted(os.listdir(out)) == ["bin", "root"]
    for rel in ("bin/h5dump", "root/usr/bin/h5dump"):
        assert open(os.path.join(out, rel), "rb").read() == (tree / rel).read_bytes(), rel
    assert subprocess.run([os.path.join(out, "bin", "h5dump")]).returncode == 0  # /bin/true, from the copy


def test_export_refuses_a_program_of_a_tree_not_exported(tmp_path):
    desc, prefix_map = fake_stack(tmp_path)
    del prefix_map[str(tmp_path / "opt" / "debian-hdf5-tools-x")]
    with pytest.raises(images.StepError, match="h5dump wraps .* which is in no exported tree"):
        images.export_stack(desc, str(tmp_path / "export"), prefix_map, patchelf="true")


def test_runpaths():
    assert images.runpath_for("bin/h5dump") == "$ORIGIN/../lib"
    assert images.runpath_for("libexec/tutorial/hyperslab_by_row") == "$ORIGIN/../lib"
    assert images.runpath_for("lib/libhdf5.so.310") == "$ORIGIN"
    assert images.runpath_for("lib/plugin/libh5fd_multifile.so") == "$ORIGIN/.."


def test_build_args_and_image_key():
    local = images.build_args("mpich", "/cache/images/debian/rootfs", "/x/export", "abc")
    assert (local["BOOTSTRAP"], local["BASE"], local["MPI"]) == ("localimage", "/cache/images/debian/rootfs", "mpich")
    pulled = images.build_args("openmpi", "docker://debian:12", "/x/export", "abc")
    assert (pulled["BOOTSTRAP"], pulled["BASE"]) == ("docker", "debian:12")
    # the MPI's Debian packages come from stacks.yaml (mpis.<mpi>.debian_packages)
    mpis = images.plan.load_config()["mpis"]
    assert local["MPI_BUILD_PACKAGES"].split() == mpis["mpich"]["debian_packages"]["build"]
    assert pulled["MPI_RUN_PACKAGES"].split() == mpis["openmpi"]["debian_packages"]["run"]
    key = images.image_key("def", local, "sha", "base", "apptainer 1.4.5")
    moved = dict(local, EXPORT="/elsewhere", COMMIT="def")  # where things are on this machine: same image
    assert images.image_key("def", moved, "sha", "base", "apptainer 1.4.5") == key
    for changed in (
        images.image_key("def2", local, "sha", "base", "apptainer 1.4.5"),
        images.image_key("def", dict(local, MPI="openmpi"), "sha", "base", "apptainer 1.4.5"),
        images.image_key("def", dict(local, MPI_RUN_PACKAGES="mpich"), "sha", "base", "apptainer 1.4.5"),
        images.image_key("def", local, "sha2", "base", "apptainer 1.4.5"),
        images.image_key("def", local, "sha", "base2", "apptainer 1.4.5"),
        images.image_key("def", local, "sha", "base", "apptainer 1.4.6"),
    ):
        assert changed != key


# -- the real images (built by `./h5stack test` before the tests) -------------------
def image(flavour):
    path = images.image_link(flavour)
    assert os.path.exists(path), f"{path}: not built (./h5stack test builds it: `./h5stack containers build`)"
    return path


def apptainer_exe():
    return apptainer.ensure_apptainer()


@ROOT_ONLY
@pytest.mark.parametrize("flavour", images.FLAVOURS)
def test_image_labels_and_stacks(flavour):
    proc = subprocess.run([apptainer_exe(), "inspect", "--json", image(flavour)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    labels = json.loads(proc.stdout)["data"]["attributes"]["labels"]
    assert labels["org.h5stack.mpi"] == flavour
    assert labels["org.h5stack.stacks"].split() == [
        f"{flavour}-hdf5-1.14", f"{flavour}-hdf5-1.14-multifile", f"{flavour}-hdf5-2", f"{flavour}-hdf5-2-multifile"
    ]  # fmt: skip
    assert len(labels["org.h5stack.commit"]) >= 12
    for app, version in (("hdf5-1.14", "1.14."), ("hdf5-2", "2."), ("hdf5-2-multifile", "2.")):
        out = exec_in_image(image(flavour), ["h5pcc", "-showconfig"], app=app)
        assert out.returncode == 0 and f"HDF5 Version: {version}" in out.stdout, (app, out.stdout[-500:], out.stderr)
    # netCDF-C, part of the 1.14 stack, with parallel netCDF-4 through the image's HDF5
    version = Stacks().config["netcdf_builds"]["source"]["upstream_version"]
    out = exec_in_image(image(flavour), ["sh", "-c", "nc-config --version --has-parallel4 --has-hdf5; ncdump 2>&1"])
    assert out.stdout.split()[:4] == ["netCDF", version, "yes", "yes"], out.stdout[-500:] + out.stderr
    assert "ncdump [-c|-h]" in out.stdout, out.stdout[-500:]


@ROOT_ONLY
@pytest.mark.parametrize("model", ["inside", "hybrid"])
@pytest.mark.parametrize("flavour", images.FLAVOURS)
def test_image_runs_equal_to_the_stack_outside(flavour, model, tmp_path):
    """Multifile in the image, merged there, equal (h5diff, outside) to MPI-IO outside."""
    stack = f"{flavour}-hdf5-1.14"
    img, exe = image(flavour), apptainer_exe()
    env_lines = "".join(f"export {k}={v}\n" for k, v in apptainer.run_env().items())
    args = "8 2 --size 64 --chunk 32 --no-limits --quiet"
    if model == "inside":
        run = f'"{exe}" exec "{img}" mpiexec -n 2 h5pwrite3dc mf.h5 {args} --driver multifile'
    else:  # this machine's mpiexec (the stack's MPI) starts one container per rank
        run = f'mpiexec -n 2 "{exe}" exec "{img}" h5pwrite3dc mf.h5 {args} --driver multifile'
    proc = in_stack(
        stack,
        f"{env_lines}mpiexec -n 2 h5pwrite3dc ref.h5 {args}\n{run} > mf.txt\n"
        f'test -f mf.h5.h5mf/metafile\n"{exe}" exec "{img}" h5mf merge -q mf.h5\nh5diff ref.h5 mf.h5\ncat mf.txt',
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "mpi-ranks: 2\n" in proc.stdout  # one job of 2 ranks, not 2 singletons


@ROOT_ONLY
@pytest.mark.parametrize("flavour", images.FLAVOURS)
def test_the_2x_stacks_tools_in_the_image_are_hdf5_2s(flavour, tmp_path):
    """In the image too, the 2.x stack's h5dump is HDF5 2.x's (its own build, or Debian's
    serial tools in the tree copied beside the stacks, /opt/h5stack) and reads a file the
    stack wrote there (a multifile directory merged by h5mf)."""
    script = (
        "mpiexec -n 2 h5pwrite3dc m.h5 8 2 --size 64 --chunk 32 --quiet --no-limits --driver multifile >/dev/null\n"
        "h5mf merge -q m.h5 >/dev/null\nsed -n 's/^exec /wraps: /p' \"$(command -v h5dump)\"\nh5dump --version\n"
        "h5dump -H m.h5 | grep -c 'DATASET \"data_' | sed 's/^/datasets: /'"
    )
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    out = exec_in_image(image(flavour), ["sh", "-ec", script], app="hdf5-2", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "h5dump: Version 2." in out.stdout and "datasets: 2" in out.stdout, out.stdout[-2000:]
    if Stacks().get(f"{flavour}-hdf5-2").description()["tools"]["origin"] == "debian":
        assert 'wraps: "/opt/h5stack/debian-hdf5-tools-' in out.stdout, out.stdout[-2000:]
