"""Shared set-up of the Python tests: the package and library of this build
tree (python/ddtk, libddtk.so at the root unless $DDTK_LIBRARY says
otherwise), the tools (bin/ or $DDTK_BIN), no user's wisdom file, and
helpers that make inputs with fbsim and read the tools' outputs."""

import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))
os.environ.setdefault("DDTK_LIBRARY", os.path.join(REPO, "libddtk.so"))
os.environ["DDTK_WISDOM"] = "/nonexistent/ddtk-test-wisdom"
BIN = os.environ.get("DDTK_BIN", os.path.join(REPO, "bin"))

import ddtk  # noqa: E402


def tool(name, *args, cwd=None):
    """Run a ddtk tool; its stdout (text). A failure fails the test."""
    r = subprocess.run([os.path.join(BIN, name), *map(str, args)], cwd=cwd,
                       capture_output=True, text=True)
    assert r.returncode == 0, f"{name} {' '.join(map(str, args))}: {r.stderr}"
    return r.stdout


def fbsim(path, **opts):
    """A synthetic observation: fbsim with --key value options (True: a flag;
    a list: the option once per value)."""
    args = ["-o", path, "-q", "--force"]
    for k, v in opts.items():
        for one in v if isinstance(v, list) else [v]:
            args += ["--" + k.replace("_", "-")] + ([] if one is True else [str(one)])
    tool("fbsim", *args)
    return str(path)


def read_tim(path):
    """A .tim's header (dict) and its float32 samples."""
    h = ddtk.read_header(path)
    return h, np.fromfile(path, dtype=np.float32, offset=h["header_bytes"])


def same_bytes(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.fixture
def tmp(tmp_path):
    return tmp_path
