# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""`h5stack spack-envs`: the Spack environments of environments/, generated from
stacks.yaml, so that the local stacks and the Spack ones are described once.

One environment per MPI of stacks.yaml with a Spack name (`spack`) and HDF5 series
(`<mpi>-hdf5-<series>`: HDF5 plain and with the multifile patch; h5stack's packages that
have a Spack recipe, h5py with MPI and h5stack's Python package, and netCDF-C with MPI for
the series the local stacks build it for, all built against the plain HDF5), and `matrix` (every stack at once, each root concretized on its own).
The files are generated, never edited; `--check` fails when a committed one is stale.
"""

import os

from h5stack.base import generated, paths
from h5stack.base.ui import StepError
from h5stack.stacks.plan import load_config, spack_mpis
from h5stack.stacks.pybuild import OWN_PYTHON, pins

ENVIRONMENTS = os.path.join(paths.ROOT, "environments")
RECIPES = os.path.join(paths.ROOT, "spack-repo", "spack_repo", "h5stack", "packages")
HDF5 = "+mpi +hl +subfiling"

HEADER = "# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause\n"

STACK = """\
# {name}: parallel HDF5 {series_text} with {mpi_description} ({mpi}; the same stack as
# `./h5stack setup {name}` builds locally), plain and with the multifile patch, and
# {contents} (built against the plain HDF5). See docs/spack.md:
#   spack -C site-configs/<system>/spack -e environments/{name} install
# Generated from stacks.yaml by `./h5stack spack-envs`: edit stacks.yaml.
spack:
  specs:
{specs}  concretizer:
    # the two HDF5 builds cannot share one node; everything else is shared
    unify: when_possible
{reuse}  view:
    # the plain stack (HDF5, h5mf, the plugins, h5pwrite3dc, h5dsm-*, h5py, h5vfd) and
    # what they need to run (numpy, mpi4py): what ReFrame's environment points at
    default:
      root: view
      exclude: [hdf5+multifile]
      link: run
    # the patched HDF5 (the driver built in, H5Pset_fapl_mpiposix)
    multifile:
      root: view-multifile
      select: [hdf5+multifile]
      link: roots
"""

MATRIX = """\
# Every stack at once: HDF5 {series_list} x {mpi_list}, plain and with the multifile
# patch, and h5stack's packages against the same plain HDF5 builds. `unify: false`: each
# root is concretized on its own, so each really gets its own MPI and HDF5 (tests/integration/spack
# checks that it does).
#   spack -C site-configs/<system>/spack -e environments/matrix concretize
# Generated from stacks.yaml by `./h5stack spack-envs`: edit stacks.yaml.
spack:
  definitions:
  - mpis: [{mpis}]
  - series: [{series}]
  specs:
  - matrix:
    - [hdf5 {hdf5} ~multifile, hdf5 {hdf5} +multifile]
    - [$series]
    - [$^mpis]
  - matrix:
    - [{packages}]
    - [{plain_hdf5s}]
    - [$^mpis]
  - matrix:
    - ['{netcdf}']
    - [{netcdf_hdf5s}]
    - [$^mpis]
  concretizer:
    unify: false
{reuse}  view: false
"""


#: no reuse of older builds an install tree holds (`--fresh` always): the patched HDF5
#: (its patch is the checkout's) and h5stack's packages are then the same release, and
#: a file the one writes the other reads; identical builds are still found installed
REUSE = """\
    # what the recipes of this checkout build, never an older build of the install tree:
    # the patched HDF5 and h5stack's packages are one release (spack-repo/README.md)
    reuse: false
"""


def packages():
    """h5stack's packages with a Spack recipe (packages/<name> and a recipe of that name)."""
    recipes = {d.replace("_", "-") for d in os.listdir(RECIPES)}
    return sorted(d for d in os.listdir(paths.PACKAGES_DIR) if d in recipes)


def python_packages():
    """The Python side of every environment: h5py with MPI, at the version the local
    stacks build (requirements/python-stacks.txt), and h5stack's h5vfd (python/)."""
    return [f"py-h5py@{pins()['h5py']} +mpi", OWN_PYTHON]


#: netCDF-C with MPI (parallel netCDF-4, through HDF5), for the HDF5 series whose local
#: stacks build it (stacks.yaml netcdf_builds), at their release (spack-repo's netcdf-c
#: overlay has it); without the compression plugins, as locally: fewer sources for an
#: offline site
NETCDF = "netcdf-c@{version} +mpi ~dap ~szip ~blosc ~zstd"


def netcdf(config):
    """The netCDF-C spec of the environments: the local stacks' release."""
    return NETCDF.format(version=config["netcdf_builds"]["source"]["upstream_version"])


def clients(config, series):
    """The libraries of other projects an environment of this HDF5 series holds."""
    return [netcdf(config)] if series in [str(s) for s in config["netcdf_builds"]["series"]] else []


def yaml_item(spec):
    """A spec as a YAML list item: quoted where a colon would make it a mapping (mpich@4.2:)."""
    return f"'{spec}'" if ":" in spec else spec


def render(config=None):
    """{environment name: spack.yaml text} for stacks.yaml."""
    config = config or load_config()
    mpis, series = spack_mpis(config), [str(s) for s in config["hdf5"]]
    pkgs = packages() + python_packages()
    texts = {}
    for mpi_name, mpi in mpis.items():
        for s in series:
            name = f"{mpi_name}-hdf5-{s}"
            specs = [f"hdf5@{s} {HDF5} {v}multifile ^{mpi}" for v in "~+"]
            specs += [f"{p} ^hdf5@{s} {HDF5} ~multifile ^{mpi}" for p in pkgs + clients(config, s)]
            lines = "".join(f"  - {yaml_item(spec)}\n" for spec in specs)
            series_text = s if "." in s else f"{s}.x"
            texts[name] = HEADER + STACK.format(
                name=name,
                reuse=REUSE,
                series=s,
                series_text=series_text,
                mpi=mpi,
                specs=lines,
                mpi_description=config["mpis"][mpi_name].get("description", mpi_name),
                contents="h5stack's packages, h5py, h5vfd and netCDF-C"
                if clients(config, s)
                else "h5stack's packages, h5py and h5vfd",
            )
    texts["matrix"] = HEADER + MATRIX.format(
        series_list=" and ".join(s if "." in s else f"{s}.x" for s in series),
        mpi_list=" and ".join(mpis.values()),
        mpis=", ".join(f"'{m}'" for m in mpis.values()),
        series=", ".join(f"'@{s}'" for s in series),
        hdf5=HDF5,
        packages=", ".join(pkgs),
        plain_hdf5s=", ".join(f"'^hdf5@{s} {HDF5} ~multifile'" for s in series),
        netcdf=netcdf(config),
        netcdf_hdf5s=", ".join(f"'^hdf5@{s} {HDF5} ~multifile'" for s in series if clients(config, s)),
        reuse=REUSE,
    )
    return texts


def run(check=False):
    """Regenerate environments/ from stacks.yaml (check: only check it)."""
    stale, texts = [], render()
    for name, text in texts.items():
        stale += generated.refresh(os.path.join(ENVIRONMENTS, name, "spack.yaml"), text, check)
    extra = sorted(set(os.listdir(ENVIRONMENTS)) - set(texts))
    if extra:
        raise StepError(f"environments/ holds {', '.join(extra)}, which stacks.yaml does not describe: remove them")
    if stale:
        raise StepError(
            f"stale Spack environments (stacks.yaml changed): {', '.join(stale)}; run `./h5stack spack-envs`"
        )
    return 0
