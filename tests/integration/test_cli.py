# Copyright h5stack developers. SPDX-License-Identifier: BSD-3-Clause
"""The h5stack command line: help, errors for bad input, list, env."""

import os
import subprocess

from conftest import ROOT, Stacks, h5stack


def test_list_shows_every_stack_built(stack_descriptions):
    proc = h5stack("list", check=True)
    lines = proc.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == Stacks().names()
    for name, desc in stack_descriptions.items():
        (line,) = [ln for ln in lines if ln.split()[0] == name]
        assert line.split()[1] == "built", line
        assert f"HDF5 {desc['hdf5_version']}" in line


def test_env_output_is_what_env_sh_holds(stack_descriptions):
    for name, desc in stack_descriptions.items():
        proc = h5stack("env", name, check=True)
        assert proc.stdout.startswith(f"# h5stack {name}:")
        exported = [ln.split("=")[0].split()[-1] for ln in proc.stdout.splitlines() if ln.startswith("export")]
        for var in ("PATH", "LD_LIBRARY_PATH", "CMAKE_PREFIX_PATH", "HDF5_PLUGIN_PATH"):
            assert var in exported, f"{name}: {var} not exported"
        # the exports keep what was there before (prepend) and add no empty entry
        out = subprocess.run(
            ["bash", "-c", f'unset LD_LIBRARY_PATH HDF5_PLUGIN_PATH; eval "$({ROOT}/h5stack env {name})"; '
             'echo "$LD_LIBRARY_PATH|$HDF5_PLUGIN_PATH|$PATH"'],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        ld, plugin, path = out.split("|")
        assert not ld.endswith(":") and "::" not in ld
        assert plugin == os.path.join(desc["stack_dir"], "plugins")
        assert path.endswith(os.environ["PATH"])


def test_a_closed_pipe_ends_quietly(stacks):
    """`./h5stack list | head` and the like: the reader is gone before the output is
    written (its end of the pipe closed at once), so every write fails with EPIPE; the
    command ends without a traceback, with the status SIGPIPE would give."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # output buffered, as in a shell
    for args, status in ((["list"], 141), (["env", stacks.names()[0]], 141), (["--help"], (0, 141))):
        proc = subprocess.Popen(
            [os.path.join(ROOT, "h5stack"), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) in (status if isinstance(status, tuple) else (status,)), (args, err)
        assert "Traceback" not in err and "BrokenPipe" not in err, (args, err)
