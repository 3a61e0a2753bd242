# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""One build, several MPIs: a stack run with the library of another MPI of the same ABI
(stacks.yaml `abi`: MPICH, MPICH 5 and Intel MPI keep MPICH's; Open MPI 4 and 5 keep
Open MPI's), as sites run one build with the MPI of each machine.

The stack's programs, plugins and Python packages stay as they were built; the runtime
directory $H5STACK_HOME/abi/<stack>-on-<mpi>/ puts the other MPI in front of them:

- lib/: the other MPI's library under the name the stack's programs link
  (libmpich.so.12 for Debian's MPICH, libmpi.so.12 for the others), beside links to
  everything in that library's directory (what it finds through $ORIGIN: its libfabric,
  UCX, ...): a library opened through a link takes the link's directory as $ORIGIN;
- bin/: the other MPI's commands (its mpiexec starts the ranks) and the stack's
  wrappers of other programs (HDF5's tools from Debian's packages, a twin's h5mf);
- plugins: the stack's;
- stack.json and env.sh: the stack's description with the other MPI's name, settings
  and library signature, so the checks' `mpi-library:` lines prove which library ran.

`./h5stack env STACK --mpi-runtime MPI` prints the exports, `./h5stack run --mpi-runtime
MPI` runs the regression on it (docs/abi.md has what works and what breaks).
"""

import json
import os
import shutil
import subprocess
import tempfile

from h5stack.base import paths
from h5stack.base.ui import StepError
from h5stack.stacks.stackdir import render_sh, write_wrapper

#: what a runtime directory's stack.json records of the swap
KEY = "abi_runtime"


def name(stack_name, mpi_name):
    return f"{stack_name}-on-{mpi_name}"


def runtime_dir(stack_name, mpi_name):
    return os.path.join(paths.sub("abi"), name(stack_name, mpi_name))


def same_family(a, b):
    """Do the libraries of these two MPIs keep one ABI (stacks.yaml `abi`)?"""
    return bool(a.abi and b.abi and a.abi["family"] == b.abi["family"])


def check_compatible(stack, runtime):
    """StepError unless runtime's library can replace the one stack was built against."""
    if runtime.name == stack.mpi.name:
        raise StepError(f"--mpi-runtime {runtime.name}: {stack.name} is built against it already")
    ours, theirs = stack.mpi.abi, runtime.abi
    if not same_family(stack.mpi, runtime):
        raise StepError(
            f"--mpi-runtime {runtime.name}: {runtime.description} keeps "
            f"{(theirs or {}).get('family', 'no known')} ABI, {stack.name} was built against "
            f"{stack.mpi.description} ({(ours or {}).get('family', 'no known')} ABI): "
            "a program runs only with a library of its own ABI"
        )


def library_path(mpi):
    """The file of mpi's library (its `abi` library): in the prefix of an MPI from wheels,
    else where the dynamic linker finds it (ldconfig's cache)."""
    soname = mpi.abi["library"]
    if mpi.wheel:
        path = os.path.join(mpi.wheel.prefix, "lib", soname)
        if not os.path.exists(path):
            raise StepError(f"{mpi.description}: {path} is missing (`./h5stack setup` a stack of it)")
        return path
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith(soname + " ") and "x86-64" in line:
            return line.rsplit("=>", 1)[1].strip()
    raise StepError(f"{mpi.description}: the dynamic linker knows no {soname} (ldconfig -p)")


def _fill(tmp, desc, stack, runtime):
    lib = os.path.join(tmp, "lib")
    os.makedirs(lib)
    target = library_path(runtime)
    for entry in os.listdir(os.path.dirname(target)) if runtime.wheel else []:
        os.symlink(os.path.join(os.path.dirname(target), entry), os.path.join(lib, entry))
    link = os.path.join(lib, stack.mpi.abi["library"])
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(target, link)
    os.makedirs(os.path.join(tmp, "bin"))
    wrappers = [write_wrapper(os.path.join(tmp, "bin", n), runtime.command(n)) for n in runtime.commands]
    for w in desc["wrappers"]:  # the stack's other programs (Debian's h5dump of a 2.x stack, a twin's h5mf)
        if w["name"] not in runtime.commands:
            wrappers.append(write_wrapper(os.path.join(tmp, "bin", w["name"]), w["target"], w["env"], w["lender"]))
    os.symlink(os.path.join(desc["stack_dir"], "plugins"), os.path.join(tmp, "plugins"))
    return wrappers


def _swap(final, new_dir):
    """Make final (a link) name new_dir at once, by a rename: a job that reads the runtime
    directory meanwhile sees the old one or the new one, never none; the old one goes."""
    previous = os.path.realpath(final) if os.path.islink(final) else None
    if os.path.isdir(final) and not os.path.islink(final):  # a directory of an earlier h5stack
        shutil.rmtree(final)
    link = f"{new_dir}.link"
    os.symlink(os.path.basename(new_dir), link)
    os.replace(link, final)
    if previous and previous != os.path.realpath(new_dir):
        shutil.rmtree(previous, ignore_errors=True)


def write(stack, runtime):
    """Write the runtime directory of stack with runtime's library (both MPI objects of
    stacks.yaml); its description (stack.json), as a stack's."""
    check_compatible(stack, runtime)
    runtime.install()  # an MPI from wheels: its prefix (cached), without building a stack of it
    desc = stack.description()
    if not desc:
        raise StepError(f"stack {stack.name} is not set up: `./h5stack setup {stack.name}`")
    final = runtime_dir(stack.name, runtime.name)  # a link to the newest of its directories
    tmp = tempfile.mkdtemp(dir=os.path.dirname(final), prefix=os.path.basename(final) + ".")
    try:
        wrappers = _fill(tmp, desc, stack, runtime)
        swapped = dict(
            desc,
            name=name(stack.name, runtime.name),
            mpi=runtime.name,
            mpi_description=f"{runtime.description} (its library; built with {desc['mpi_description']})",
            mpi_version=runtime.version(),
            mpi_library_signature=runtime.signature,
            mpi_env=runtime.env,
            mpi_env_as_root=runtime.env_as_root,
            stack_dir=final,
            prefixes=[final, *desc["prefixes"]],  # lib/ first on LD_LIBRARY_PATH, bin/ on PATH
            wrappers=wrappers,
            **{KEY: {"stack": stack.name, "built_with": stack.mpi.name, "family": runtime.abi["family"]}},
        )
        with open(os.path.join(tmp, "stack.json"), "w") as f:
            json.dump(swapped, f, indent=1)
        with open(os.path.join(tmp, "env.sh"), "w") as f:
            f.write(render_sh(swapped))
        os.chmod(tmp, 0o777 & ~paths.umask())
        _swap(final, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return swapped


def descriptions(dirs):
    """The stack.json of runtime directories (written by write())."""
    result = []
    for d in dirs:
        try:
            with open(os.path.join(d, "stack.json")) as f:
                result.append(json.load(f))
        except (OSError, ValueError) as err:
            raise StepError(f"{d}: no runtime directory of `./h5stack run --mpi-runtime` ({err})") from None
    return result
