"""`pip install ./python` works offline and compiles nothing: the wheel is
built by copying (python/_build/backend.py) and carries the build tree's
libddtk.so.0 next to the package, which the installed package then loads."""

import os
import subprocess
import sys

import pytest

from conftest import REPO


def test_pip_install_offline_carries_the_library(tmp):
    r = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    if r.returncode:
        pytest.skip("no pip for this python")
    # the library the tests load (conftest: the build tree's, unless given)
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-cache-dir",
                        "--target", str(tmp / "site"), os.path.join(REPO, "python")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert (tmp / "site" / "ddtk" / "libddtk.so.0").exists()
    env = {k: v for k, v in os.environ.items() if k != "DDTK_LIBRARY"}
    env["PYTHONPATH"] = str(tmp / "site")
    out = subprocess.run([sys.executable, "-c", "import ddtk; print(ddtk.library_path)"],
                         capture_output=True, text=True, env=env, cwd=str(tmp))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp / "site" / "ddtk" / "libddtk.so.0")
