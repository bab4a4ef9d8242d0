"""ddtk.fdas on a NumPy series gives the fdas tool's candidates: every
column of its TSV, for a series of an FFT-friendly length and one the tool
pads with the mean."""

import numpy as np
import pytest

import ddtk
from conftest import fbsim, read_tim, tool

P, TSAMP = 0.0218, 0.001


def tsv_rows(text):
    return [line.split("\t") for line in text.strip().split("\n")[1:]]


def formatted(c, T, dm=0.0):
    """A candidate as fdas_out.c's TSV writes it (after the rank)."""
    return ["%.3f" % c["sigma"], "%.3f" % c["power"], "%d" % c["numharm"],
            "%.9f" % (1000.0 / c["freq"]), "%.9f" % c["freq"], "%.4f" % (c["freq"] * T),
            "%.3f" % (c["fdot"] * T * T), "%.6e" % c["fdot"], "%.4f" % c["accel"], "%.2f" % dm]


GPU = pytest.mark.skipif(not ddtk.gpu_usable(0)[0], reason=f"no GPU: {ddtk.gpu_usable(0)[1]}")


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=GPU)])
@pytest.mark.parametrize("nsamples", [32768, 30001])
def test_candidates_equal_the_tools(tmp, nsamples, backend):
    tim = fbsim(tmp / "p.tim", tim=True, tsamp=TSAMP, nsamples=nsamples, seed=11,
                pulsar=f"{P},0,0.1,0.8,3.0")
    ref = tsv_rows(tool("fdas", "-q", "--zmax", 20, "--backend", backend, tim))
    h, x = read_tim(tim)
    assert x.size == nsamples
    cands = ddtk.fdas(x, h["tsamp"], zmax=20, backend=backend)
    assert cands.dtype == ddtk.CAND_DTYPE and len(ref) >= 1
    assert [r[1:] for r in ref] == [formatted(c, nsamples * TSAMP) for c in cands]
    assert abs(cands[0]["freq"] * nsamples * TSAMP - nsamples * TSAMP / P) < 2
    # the input is not changed (padding works on a copy)
    assert np.array_equal(x, read_tim(tim)[1])


def test_accel_range_keeps_only_those_candidates(tmp):
    tim = fbsim(tmp / "p.tim", tim=True, tsamp=TSAMP, nsamples=32768, seed=3,
                pulsar=f"{P},0,0.1,0.8,30.0")
    h, x = read_tim(tim)
    every = ddtk.fdas(x, h["tsamp"], zmax=40, backend="cpu")
    some = ddtk.fdas(x, h["tsamp"], zmax=40, backend="cpu", accel_range=(0, 1e9))
    assert some.size < every.size and np.all(some["accel"] >= 0)
