# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""h5stack's Apptainer images (containers/h5stack.def, `./h5stack containers build`)
through ReFrame's Apptainer container platform, in both run models:

- `inside`: the image's own MPI starts the ranks (`apptainer exec IMAGE mpiexec -n 2 ...`,
  the job's launcher is local: one container holds every rank);
- `hybrid`: the partition's launcher (mpirun, srun) starts one container per rank
  (`mpirun -np 2 apptainer exec IMAGE program`); the host's MPI must be ABI-compatible
  with the image's, which the environment's MPI (the same Debian MPI) is.

Checks (per model, on the image of the environment's MPI; skipped with the reason where
the partition has no Apptainer or the image is not built):
- `container_h5pwrite3dc`: h5pwrite3dc writes the same images with HDF5's MPI-IO driver
  (`--verify` reads every pixel back) and with the multifile driver (a directory), h5mf
  merges the directory, h5diff finds the two files equal; on the image's HDF5 1.14 and
  2.x stacks (Apptainer apps).
- `container_tutorial`: HDF5's parallel tutorial program (hyperslab by rows, 4 ranks),
  compiled in the image, writes its dataset; h5dump shows the tutorial's values.
"""

import os
import re
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))
from h5checks.mpi import mpi_sanity  # noqa: E402
from h5checks.nodes import MultiNodeMixin  # noqa: E402


class container_base(MultiNodeMixin, rfm.RunOnlyRegressionTest):
    valid_systems = ["+apptainer"]
    #: the host MPI of the image's flavour (the plain 1.14 stack's environment; not one run
    #: with another MPI's library: its image is its own MPI's)
    #: and only where an image carries that MPI (Debian's MPICH and Open MPI, one per family)
    valid_prog_environs = ["+local-stack +hdf5-1_14 -variant-multifile -mpi-runtime +container-image"]
    model = parameter(["inside", "hybrid"])
    #: the image's stack the programs come from (an Apptainer app of the image)
    app = variable(str, value="hdf5-1.14")
    time_limit = "10m"

    @run_after("init")
    def one_node_inside(self):
        self.one_node = self.model == "inside"  # the image's mpiexec starts every rank on its node

    @run_after("setup")
    def use_image(self):
        image = self.current_environ.extras.get("container_image")
        self.skip_if(not image or not os.path.exists(image),
                     f"no image of {self.current_environ.extras.get('mpi')}: `./h5stack containers build "
                     f"{self.current_environ.extras.get('mpi')}` makes {image}")  # fmt: skip
        self.container_platform = "Apptainer"
        self.container_platform.image = image
        self.container_platform.pull_image = False
        self.container_platform.options = ["--app", self.app]

    def in_image(self, *programs):
        """The container's command: the programs one after the other, each an MPI job
        started by the image's mpiexec (inside) or one rank of the partition's (hybrid)."""
        mpiexec = f"mpiexec -n {self.num_tasks} " if self.model == "inside" else ""
        return "sh -c '" + " && ".join(mpiexec + p for p in programs) + "'"

    @run_before("run")
    def set_launcher(self):
        if self.model == "inside":  # the image's mpiexec starts the ranks, one container
            self.job.launcher = getlauncher("local")()
            # on this node, by fork: inside a Slurm job MPICH's hydra and Open MPI's mpirun
            # would start their daemons with srun, which the image does not have
            self.env_vars["HYDRA_BOOTSTRAP"] = "fork"
            self.env_vars["OMPI_MCA_plm"] = "isolated"


@rfm.simple_test
class container_h5pwrite3dc(container_base):
    descr = "h5pwrite3dc in the image: MPI-IO and multifile (--verify), merged by h5mf, equal by h5diff"
    tags = {"containers", "h5pwrite3dc", "multifile", "correctness"}
    num_tasks = 2
    image_stack = parameter(["hdf5-1.14", "hdf5-2"])

    @run_after("init")
    def use_app(self):
        self.app = self.image_stack

    @run_before("run")
    def set_command(self):
        images = "8 2 --size 256 --chunk 128 --no-limits --quiet"
        ref = f"h5pwrite3dc ref.h5 {images} --verify"
        multifile = f"h5pwrite3dc mf.h5 {images} --driver multifile"
        image = self.container_platform.image
        run = f"apptainer exec --app {self.app} {image}"
        if self.model == "inside":  # one container, the image's mpiexec runs both
            self.container_platform.command = self.in_image(ref, multifile)
            self.prerun_cmds = []
        else:  # one MPI program per launch: the reference is a launch of its own, before
            self.job.num_tasks = self.num_tasks  # (set on the job later otherwise)
            launcher = self.job.launcher.run_command(self.job)
            if type(self.job.launcher).registered_name == "srun":  # srun takes the allocation's count
                launcher += f" -n {self.num_tasks}"
            self.prerun_cmds = [f"{launcher} {run} {ref} || exit 1"]
            self.container_platform.command = multifile
        self.postrun_cmds = [
            "status=$?",
            'echo "launcher-status: $status"',
            f'{run} sh -c "h5mf info mf.h5 >/dev/null 2>&1 && echo multifile-file: yes; h5mf merge -q mf.h5"',
            f"{run} h5diff ref.h5 mf.h5 2>&1 | sed 's/^/h5diff: /'; echo \"h5diff-status: ${{PIPESTATUS[0]}}\"",
            f'{run} sh -c \'echo "image-stack: $H5STACK_STACK"\'',
            "exit $status",
        ]

    @sanity_function
    def validate(self):
        series = self.app.split("-")[1]
        return sn.all(
            [
                sn.assert_found(r"^launcher-status: 0$", self.stdout, msg="the job in the image failed"),
                sn.assert_found(r"^ verify: ok, 524288 pixels read back", self.stdout,
                                msg="the MPI-IO file did not read back through the image's HDF5"),
                sn.assert_found(r"^multifile-file: yes$", self.stdout, msg="no multifile file was written"),
                sn.assert_found(r"^h5diff-status: 0$", self.stdout, msg="h5diff: the merged file differs from MPI-IO"),
                sn.assert_not_found(r"^h5diff: ", self.stdout, msg="h5diff reported something"),
                sn.assert_eq(sn.extractall(r"^hdf5-library: (\S+)$", self.stdout, 1, lambda v: v.split(".")[0]),
                             [series.split(".")[0]] * 2, msg=f"expected HDF5 {series} in both runs: {{0}}"),
                sn.assert_found(rf"^image-stack: {self.current_environ.extras['mpi']}-hdf5-{series}$", self.stdout,
                                msg="the image's app did not select its stack"),
            ]
            + mpi_sanity(self, expected_lines=2)
        )  # fmt: skip


#: HDF5's tutorial: hyperslab by rows, 4 ranks writing 2 rows each (10, 11, 12, 13)
BY_ROW = [[10] * 5] * 2 + [[11] * 5] * 2 + [[12] * 5] * 2 + [[13] * 5] * 2


@rfm.simple_test
class container_tutorial(container_base):
    descr = "HDF5's parallel tutorial program (hyperslab by rows), compiled in the image"
    tags = {"containers", "tutorial", "correctness"}
    num_tasks = 4

    @run_before("run")
    def set_command(self):
        program = f"/opt/h5stack/{self.current_environ.extras['mpi']}-hdf5-1.14/libexec/tutorial/hyperslab_by_row"
        self.container_platform.command = self.in_image(f"{program} tutorial.h5 collective mpio")
        run = f"apptainer exec --app {self.app} {self.container_platform.image}"
        self.keep_files = ["h5dump.out"]
        self.postrun_cmds = [
            "status=$?",
            'echo "launcher-status: $status"',
            f"{run} h5dump -d /IntArray -y tutorial.h5 > h5dump.out",
            "exit $status",
        ]

    @sanity_function
    def validate(self):
        values = sn.extractsingle(r"(?s)DATA \{(.*?)\}", "h5dump.out", 1, lambda t: [int(v) for v in re.findall(r"-?\d+", t)])
        ranks = sn.extractall(r"^rank (\d+) of (\d+)$", self.stdout, tag=(1, 2), conv=int)
        return sn.all(
            [
                sn.assert_found(r"^launcher-status: 0$", self.stdout, msg="the tutorial program failed"),
                sn.assert_eq(sn.sorted(ranks), [(r, 4) for r in range(4)],
                             msg="expected 'rank R of 4' for R = 0..3 (a wrong launcher starts singletons): {0}"),
                sn.assert_eq(values, [v for row in BY_ROW for v in row], msg="the dataset differs from the tutorial's: {0}"),
            ]
        )  # fmt: skip
