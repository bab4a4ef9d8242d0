"""Wisdom as the tools use it: a plan reads the configuration ddtune stored
for its set-up (Plan(wisdom=PATH), or $DDTK_WISDOM with wisdom=True), and
none with wisdom=False; a configuration changes speed, never the series."""

import numpy as np

import ddtk
from conftest import fbsim, same_bytes, tool


def test_plan_reads_the_wisdom_ddtune_stored(tmp, monkeypatch):
    fil = fbsim(tmp / "a.fil", nchans=64, nbits=8, nsamples=3000)
    wisdom = tmp / "wisdom"
    dms = list(np.arange(0, 64, 1.0))
    tool("ddtune", fil, "--dm", ",".join(map(str, dms)), "--backend", "cpu", "--threads", 1,
         "--budget", 1, "--wisdom", wisdom)
    assert wisdom.exists()
    kw = dict(dms=dms, backend="cpu", threads=1)
    tuned = ddtk.Plan(fil, wisdom=str(wisdom), **kw)
    assert tuned.wisdom_found
    assert not ddtk.Plan(fil, wisdom=False, **kw).wisdom_found
    assert not ddtk.Plan(fil, wisdom=str(tmp / "none"), **kw).wisdom_found
    monkeypatch.setenv("DDTK_WISDOM", str(wisdom))
    assert ddtk.Plan(fil, **kw).wisdom_found
    # another set-up (other DM count) has no entry
    assert not ddtk.Plan(fil, dms=np.arange(0, 256, 1.0), backend="cpu", threads=1).wisdom_found
    blk = ddtk.read_block(fil)
    assert same_bytes(tuned.execute(blk), ddtk.Plan(fil, wisdom=False, **kw).execute(blk))
