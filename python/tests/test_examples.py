"""python/examples run: bowtie.py finds its simulated burst (DM 150) and
draws the DM-time plane as text when asked (or without matplotlib);
single_pulse.py's search of its streamed simulation finds both bursts."""

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


def test_single_pulse_finds_the_simulated_bursts(tmp):
    r = subprocess.run([sys.executable, os.path.join(REPO, "python", "examples",
                                                     "single_pulse.py"), "-o", "c.cand"],
                       capture_output=True, text=True, cwd=str(tmp))
    assert r.returncode == 0, r.stderr
    rows = re.findall(r"^ +([0-9.]+) +([0-9.]+) +([0-9.]+) +(\d+) +(\d+)$", r.stdout, re.M)
    assert len(rows) == 2, r.stdout
    # brightest first: the DM 80 burst at 0.5 s, then the DM 250 one at 1.6 s
    (s1, t1, d1, _, _), (s2, t2, d2, _, _) = [tuple(map(float, x)) for x in rows]
    assert s1 > s2 > 8 and abs(t1 - 0.5) < 0.002 and abs(t2 - 1.6) < 0.002
    assert abs(d1 - 80) < 4 and abs(d2 - 250) < 6
    import ddtk
    assert ddtk.read_candidates(tmp / "c.cand").size == 2
