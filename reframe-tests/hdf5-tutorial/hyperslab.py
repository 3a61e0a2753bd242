# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
# The four hyperslab programs of the HDF Group's Parallel HDF5 tutorial
# (by rows, by columns, by pattern, by chunks), written in our own C under
# src/.  Each is compiled once per programming environment with the
# environment's C compiler (h5pcc), run with collective and with independent
# MPI-IO transfers, and its file is checked with h5dump.

import os
import re
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)
from reframe.core.exceptions import SanityError

# appended, never inserted: ReFrame loads this file with its own entry at the end and removes it by position
sys.path.append(os.path.join(os.path.dirname(__file__), '..', 'lib'))
from h5checks.nodes import MultiNodeMixin, nodes_sanity  # noqa: E402

# Ranks each program requires and the dataset it must leave in its file
# (the tutorial's figures, row by row).
PATTERNS = {
    'by_row': {
        'num_tasks': 4,
        'data': [[10] * 5] * 2 + [[11] * 5] * 2 +
                [[12] * 5] * 2 + [[13] * 5] * 2,
    },
    'by_col': {
        'num_tasks': 2,
        'data': [[1, 2, 10, 20, 100, 200]] * 8,
    },
    'by_pattern': {
        'num_tasks': 4,
        'data': [[1, 3, 1, 3], [2, 4, 2, 4]] * 4,
    },
    'by_chunk': {
        'num_tasks': 4,
        'data': [[1, 1, 2, 2]] * 4 + [[3, 3, 4, 4]] * 4,
    },
}


@sn.deferrable
def h5dump_dataset(path):
    '''Parse the output of ``h5dump -d DSET FILE`` for one dataset.

    Returns a dict with ``type`` (e.g. ``'H5T_STD_I32LE'``), ``dims`` (list
    of ints, from DATASPACE) and ``rows`` (the DATA section as a list of rows
    of ints).  h5dump prints the data as ``(i,j): v, v, ...`` lines, starting
    a new line at each row and wrapping long rows with a fresh ``(i,j):``
    index; values are laid out in row-major order from each index on.
    '''
    try:
        with open(path) as fp:
            text = fp.read()
    except OSError as err:
        raise SanityError(f'cannot read h5dump output: {err}') from None
    if not text.strip():
        raise SanityError(f'{path} is empty: h5dump failed or is not on '
                          f'PATH (see the job\'s stderr)')

    dtype = re.search(r'DATATYPE\s+(\S+)', text)
    space = re.search(r'DATASPACE\s+SIMPLE\s*\{\s*\(([\d,\s]+)\)', text)
    data = re.search(r'\bDATA\s*\{(.*?)\}', text, re.DOTALL)
    if not (dtype and space and data):
        raise SanityError(f'no DATATYPE/DATASPACE/DATA section in {path}')

    dims = [int(d) for d in space.group(1).split(',')]
    if len(dims) != 2:
        raise SanityError(f'expected a 2-D dataset, h5dump shows {dims}')

    nrows, ncols = dims
    flat = [None] * (nrows * ncols)
    # re.split with two groups yields: head, i, j, values, i, j, values, ...
    pieces = re.split(r'\((\d+),\s*(\d+)\):', data.group(1))
    for k in range(1, len(pieces), 3):
        i, j, values = pieces[k:k + 3]
        pos = int(i) * ncols + int(j)
        for value in re.findall(r'-?\d+', values):
            if pos >= len(flat):
                raise SanityError(f'more values than {nrows}x{ncols} '
                                  f'in {path}')
            flat[pos] = int(value)
            pos += 1

    rows = [flat[r * ncols:(r + 1) * ncols] for r in range(nrows)]
    return {'type': dtype.group(1), 'dims': dims, 'rows': rows}


class hdf5_tutorial_build(rfm.CompileOnlyRegressionTest):
    '''Compile one tutorial program with the environment's C compiler.'''

    program = parameter(list(PATTERNS))
    sourcesdir = 'src'
    build_system = 'SingleSource'

    @run_before('compile')
    def set_sources(self):
        self.sourcepath = f'hyperslab_{self.program}.c'
        self.executable = f'hyperslab_{self.program}'
        self.build_system.cflags = ['-std=c99', '-Wall', '-Wextra', '-O2']


@rfm.simple_test
class hdf5_tutorial_hyperslab(MultiNodeMixin, rfm.RunOnlyRegressionTest):
    '''Run a tutorial program and compare its dataset with the tutorial.'''

    pattern = parameter(list(PATTERNS))
    transfer = parameter(['collective', 'independent'])
    #: ``mpio``: HDF5's MPI-IO driver; ``multifile``: our driver, selected by name
    #: (a plugin on the environment's HDF5_PLUGIN_PATH, or built into a patched
    #: HDF5: feature ``multifile``), written as a directory,
    #: verified and reconstructed with ``h5mf`` before h5dump reads it.
    driver = parameter(['mpio', 'multifile'])

    valid_systems = ['*']
    valid_prog_environs = ['+hdf5-parallel']
    tags = {'tutorial', 'correctness'}
    #: a deadlock (e.g. ranks disagreeing in a collective) fails, not hangs
    time_limit = '5m'

    #: All four programs, built once per environment; the run picks its own.
    builds = fixture(hdf5_tutorial_build, scope='environment', action='join')

    #: The h5dump to validate the file with (a stack may ship without tools).
    h5dump = variable(str, value='h5dump')

    #: A substring of the first line of ``MPI_Get_library_version`` for each
    #: value of the environment's ``extras['mpi']``; an environment may give
    #: its own in ``extras['mpi_library_signature']``.
    mpi_banners = variable(dict, value={
        'mpich': 'MPICH Version',
        'openmpi': 'Open MPI',
    })

    h5file = 'tutorial.h5'
    dumpfile = 'h5dump.out'
    keep_files = [dumpfile]

    @run_after('init')
    def set_num_tasks(self):
        self.num_tasks = PATTERNS[self.pattern]['num_tasks']
        self.descr = (f'Parallel HDF5 tutorial: hyperslab {self.pattern}, '
                      f'{self.transfer} transfer, {self.driver} driver, '
                      f'{self.num_tasks} ranks')
        if self.driver == 'multifile':
            self.valid_prog_environs = ['+hdf5-parallel +multifile']
            self.tags = self.tags | {'multifile'}

    @run_after('setup')
    def set_executable(self):
        build = next(b for b in self.builds if b.program == self.pattern)
        self.executable = os.path.join(build.stagedir, build.executable)
        self.executable_opts = [self.h5file, self.transfer, self.driver]
        # Keep the launcher's exit status as the job's: h5dump runs after it.
        # (printed too: batch backends without accounting, e.g. squeue, know no exit codes)
        self.postrun_cmds = ['status=$?', 'echo "launcher-status: $status"']
        if self.driver == 'multifile':
            self.postrun_cmds += [
                f'h5mf info {self.h5file} > /dev/null 2>&1 && echo "multifile-file: yes"',
                f'h5mf verify {self.h5file} || status=1',
                f'h5mf merge -q {self.h5file} || status=1',
            ]
        self.postrun_cmds += [
            f'{self.h5dump} -d /IntArray {self.h5file} > {self.dumpfile}',
            'exit $status',
        ]

    @sanity_function
    def validate(self):
        nranks = self.num_tasks
        ranks = sn.extractall(r'^rank (\d+) of (\d+)$', self.stdout,
                              tag=(1, 2), conv=int)
        library = sn.extractsingle(r'^mpi-library: (.*)$', self.stdout, 1)
        extras = self.current_environ.extras
        mpi = extras.get('mpi')
        banner = extras.get('mpi_library_signature',
                            self.mpi_banners.get(mpi))
        dump = h5dump_dataset(os.path.join(self.stagedir, self.dumpfile))
        expected = PATTERNS[self.pattern]['data']
        shape = [len(expected), len(expected[0])]
        all_ranks = [(r, nranks) for r in range(nranks)]
        # the HDF5 the environment names is the one that ran (not another on the path)
        hdf5_version = extras.get('hdf5_version')
        if hdf5_version:
            library_checks = [sn.assert_eq(
                sn.extractsingle(r'^hdf5-library: (\S+)$', self.stdout, 1),
                hdf5_version,
                msg='the program ran with HDF5 {0}, the environment has {1}')]
        else:
            library_checks = []
        if self.driver == 'multifile':
            multifile = [
                sn.assert_found(r'^multifile-file: yes$', self.stdout,
                                msg='the driver did not write a multifile file'),
                sn.assert_found(r': ok: \d+ ranks', self.stdout,
                                msg='h5mf verify did not pass'),
            ]
        else:
            multifile = []
        return sn.all(multifile + [
            # A launcher of the wrong MPI starts N singletons ("rank 0 of 1").
            sn.assert_eq(sn.sorted(ranks), all_ranks,
                         msg=f'expected "rank R of {nranks}" for R = 0..'
                             f'{nranks - 1}, got {{0}}'),
            sn.assert_true(banner is not None,
                           msg=f'environment extras give no '
                               f'mpi_library_signature and mpi={mpi!r} is '
                               f'not one of {sorted(self.mpi_banners)}'),
            sn.assert_in(banner, library,
                         msg=f'{{0!r}} not in the MPI library {{1!r}}: the '
                             f'program does not run with {mpi}'),
            sn.assert_eq(sn.extractsingle(r'^launcher-status: (\d+)$',
                                          self.stdout, 1, int), 0,
                         msg='the MPI program exited with status {0}'),
            sn.assert_true(self.job.exitcode in (None, 0),
                           msg=f'the job exited with status {self.job.exitcode}'),
            sn.assert_in(dump['type'], ['H5T_STD_I32LE', 'H5T_STD_I32BE'],
                         msg='dataset type {0} is not a 32-bit integer'),
            sn.assert_eq(dump['dims'], shape,
                         msg='dataset dimensions {0}, expected {1}'),
            sn.assert_eq(dump['rows'], expected,
                         msg='dataset differs from the tutorial: got {0}, '
                             'expected {1}'),
        ] + library_checks + nodes_sanity(self))
