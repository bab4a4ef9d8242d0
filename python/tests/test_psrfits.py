"""PSRFITS search-mode input, read by the library as a filterbank of its
total intensity: its header as a dict, blocks read forward and back, series
equal dd_direct's on the .fits and on the filterbank of the same samples,
and channels of weight 0 killed as the tools kill them."""

import numpy as np

import ddtk
from conftest import fbsim, read_tim, same_bytes, tool

DMS = [0.0, 25.0, 60.0]
OPTS = dict(nchans=32, tsamp=0.000256, nsamples=5000, fch1=1400, foff=-2, seed=4,
            pulse="0.6,60,0.002,25")


def dd_direct(tmp, path, *extra):
    out = tmp / ("o" + str(len(list(tmp.iterdir()))))
    out.mkdir()
    tool("dd_direct", "--no-baseline", path, "--dm", ",".join(map(str, DMS)), "--prefix", out / "x", "-q",
         *extra)
    return np.stack([read_tim(out / f"x_DM{d:.2f}.tim")[1] for d in DMS])


def test_psrfits_reads_as_its_filterbank(tmp):
    fil = fbsim(tmp / "a.fil", nbits=4, **OPTS)
    fits = fbsim(tmp / "a.fits", nbits=4, format="psrfits", nsblk=512, **OPTS)
    h = ddtk.read_header(fits)
    assert h["format"] == "psrfits" and ddtk.read_header(fil)["format"] == "sigproc"
    assert h["nchans"] == 32 and h["nbits"] == 4 and h["nsamples"] >= 5000
    with ddtk.Reader(fits) as r, ddtk.Reader(fil) as f:
        assert np.array_equal(r.read_block(0, 5000), f.read_block(0, 5000))
        # forward past a row, then back (a reopen), as the filterbank holds them
        assert np.array_equal(r.read_block(3000, 700), f.read_block(3000, 700))
        assert np.array_equal(r.read_block(10, 600), f.read_block(10, 600))
    ref = dd_direct(tmp, fits)
    got = ddtk.dedisperse(fits, DMS)
    assert same_bytes(got, ref)
    # the filterbank's series are the first of them (the last row is padded)
    from_fil = dd_direct(tmp, fil)
    assert same_bytes(got[:, :from_fil.shape[1]], from_fil)


def test_zero_weight_channels_are_killed_as_the_tools_do(tmp):
    (tmp / "zero.txt").write_text("0:3,20\n")
    fits = fbsim(tmp / "z.fits", nbits=8, format="psrfits", nsblk=1000,
                 zero_weight=tmp / "zero.txt", **OPTS)
    h = ddtk.read_header(fits)
    assert list(np.nonzero(h["dead"])[0]) == [0, 1, 2, 3, 20]
    plan = ddtk.Plan(h, dms=DMS)
    assert plan.nlive == 32 - 5
    ref = dd_direct(tmp, fits)
    assert same_bytes(ddtk.dedisperse(fits, DMS), ref)
    assert same_bytes(plan.execute(ddtk.read_block(fits)), ref)
