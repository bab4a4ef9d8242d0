"""python/examples run: bowtie.py finds its simulated burst (DM 150) and
draws the DM-time plane as text when asked (or without matplotlib)."""

import os
import re
import subprocess
import sys

from conftest import REPO


def test_bowtie_finds_the_burst(tmp):
    r = subprocess.run([sys.executable, os.path.join(REPO, "python", "examples", "bowtie.py"),
                        "--text"], capture_output=True, text=True, cwd=str(tmp))
    assert r.returncode == 0, r.stderr
    m = re.search(r"brightest: DM ([0-9.]+) pc cm\^-3, t ([0-9.]+) s, S/N ([0-9.]+)", r.stdout)
    assert m, r.stdout
    dm, t, snr = map(float, m.groups())
    assert abs(dm - 150) < 3 and abs(t - 0.45) < 0.001 and snr > 15
    assert r.stdout.count("|") >= 20 and "@" in r.stdout
