"""The tools' input options from Python: RFI excision (rfi='auto',
rfi_clip, an rfifind mask), --zerodm and a killfile together, through
dedisperse, Plan.stream and a cleaning Reader, byte-identical to dd_direct's
series with the same options; a list of PSRFITS files read as one; the
library's progress through a Python callable; bad options."""

import struct

import numpy as np
import pytest

import ddtk
from conftest import fbsim, read_tim, same_bytes, tool

DMS = [60.0, 120.0]
# rfi.bats's observation, 3 s: a pulsar at DM 60, a burst at DM 120, and RFI
GPU = pytest.mark.skipif(not ddtk.gpu_usable(0)[0], reason=f"no GPU: {ddtk.gpu_usable(0)[1]}")
OBS = dict(nchans=128, nbits=8, tsamp=0.000256, tobs=3, fch1=1500, foff=-1, seed=5,
           pulsar="0.2137,60,0.04,0.6", pulse="1.3,120,0.002,20")


@pytest.fixture(scope="module")
def rfi_fil(tmp_path_factory):
    return fbsim(tmp_path_factory.mktemp("rfi") / "rfi.fil", rfi=["chans:0.1:5", "impulses:1:50"],
                 **OBS)


def dd_direct(tmp, path, *extra):
    """dd_direct's raw sums at DMS with the extra options, as (2, N) float32."""
    out = tmp / ("o" + str(len(list(tmp.iterdir()))))
    out.mkdir()
    tool("dd_direct", "--no-baseline", *([path] if isinstance(path, str) else path),
         "--dm", ",".join(map(str, DMS)), "--prefix", out / "x", "-q", *extra)
    return np.stack([read_tim(out / f"x_DM{d:.2f}.tim")[1] for d in DMS])


def write_mask(path, nchan, nint, pts, chans, ints):
    """A PRESTO rfifind mask (rfi.bats's write_mask): channels chans (lowest
    frequency first) in every interval, and whole intervals ints."""
    with open(path, "wb") as f:
        f.write(struct.pack("6d", 6.0, 10.0, 60000.0, pts * 0.000256, 1373.0, 1.0))
        f.write(struct.pack("4i", nchan, nint, pts, len(chans)))
        f.write(struct.pack("%di" % len(chans), *chans))
        f.write(struct.pack("i", len(ints)))
        f.write(struct.pack("%di" % len(ints), *ints))
        per = [nchan if i in ints else len(chans) for i in range(nint)]
        f.write(struct.pack("%di" % nint, *per))
        for i in range(nint):
            if 0 < per[i] < nchan:
                f.write(struct.pack("%di" % per[i], *chans))
    return str(path)


def test_rfi_auto_equals_dd_direct(tmp, rfi_fil):
    ref = dd_direct(tmp, rfi_fil, "--rfi", "auto")
    raw = dd_direct(tmp, rfi_fil)
    assert not same_bytes(ref, raw)             # the excision changed something
    assert same_bytes(ddtk.dedisperse(rfi_fil, DMS, rfi="auto"), ref)
    # streamed in small gulps with a callback: the cleaning's blocks count from the start
    plan = ddtk.Plan(rfi_fil, dms=DMS, gulp=3000)
    parts = []
    run = plan.stream(rfi_fil, lambda t0, x: parts.append(x.copy()), rfi="auto")
    assert same_bytes(np.concatenate(parts, axis=1), ref)
    r = run["rfi"]
    assert r["blocks"] == -(-ddtk.read_header(rfi_fil)["nsamples"] // 2048)
    assert 0 < r["samples_masked"] < r["samples"] and r["chans_ever"] > 0
    # a cleaning Reader gives the cleaned samples, whatever the reads' order
    with ddtk.Reader(rfi_fil, rfi="auto") as rd:
        late = rd.read_block(5000, 3000)
        blk = rd.read_block()
        assert np.array_equal(blk[:, 5000:8000], late)
    assert same_bytes(plan.execute(blk), ref)
    # rfi="none" is no cleaning
    assert same_bytes(ddtk.dedisperse(rfi_fil, DMS, rfi="none"), raw)


@GPU
def test_rfi_auto_on_the_gpu_equals_the_cpu_tool(tmp, rfi_fil):
    # 8-bit sums below 2^24: the same bytes on both backends, searched alike
    ref = dd_direct(tmp, rfi_fil, "--rfi", "auto", "--backend", "cpu")
    assert same_bytes(ddtk.dedisperse(rfi_fil, DMS, rfi="auto", backend="gpu", gulp=5000), ref)
    cands = ddtk.single_pulse_search(ref, DMS, ddtk.read_header(rfi_fil)["tsamp"])
    run = ddtk.Plan(rfi_fil, dms=DMS, backend="gpu").stream(rfi_fil, search=True, rfi="auto")
    assert np.array_equal(run["candidates"], cands) and cands.size >= 1


def test_rfi_clip_and_zerodm_and_killfile_equal_dd_direct(tmp, rfi_fil):
    (tmp / "kill.txt").write_text("0:3,77\n")
    ref = dd_direct(tmp, rfi_fil, "--rfi", "auto", "--rfi-clip", 3, "--zerodm", "--killfile",
                    tmp / "kill.txt")
    got = ddtk.dedisperse(rfi_fil, DMS, rfi="auto", rfi_clip=3, zerodm=True,
                          kill=str(tmp / "kill.txt"))
    assert same_bytes(got, ref)
    assert not same_bytes(got, ddtk.dedisperse(rfi_fil, DMS, rfi="auto", zerodm=True,
                                               kill=str(tmp / "kill.txt")))


def test_rfifind_mask_equals_dd_direct(tmp, rfi_fil):
    mask = write_mask(tmp / "m.mask", 128, 6, 2048, [27, 39, 46, 63, 72, 120], [0, 2])
    ref = dd_direct(tmp, rfi_fil, "--mask", mask)
    assert not same_bytes(ref, dd_direct(tmp, rfi_fil))
    assert same_bytes(ddtk.dedisperse(rfi_fil, DMS, mask=mask), ref)
    run = ddtk.Plan(rfi_fil, dms=DMS).stream(rfi_fil, lambda t0, x: None, mask=mask)
    # interval 0 and 2 whole, 6 channels of the other intervals' samples
    nsamp = ddtk.read_header(rfi_fil)["nsamples"]
    assert run["rfi"]["samples_masked"] == 2 * 2048 * 128 + 6 * (nsamp - 2 * 2048)
    ref2 = dd_direct(tmp, rfi_fil, "--mask", mask, "--rfi", "auto")
    assert same_bytes(ddtk.dedisperse(rfi_fil, DMS, mask=mask, rfi="auto"), ref2)


def test_psrfits_files_of_one_observation(tmp):
    opts = dict(OBS, tobs=1.5)
    fbsim(tmp / "m.fits", format="psrfits", nsblk=256, rows_per_file=8, **opts)
    files = sorted(str(p) for p in tmp.glob("m_*.fits"))
    assert len(files) >= 3
    ref = dd_direct(tmp, files)
    assert same_bytes(ddtk.dedisperse(files, DMS), ref)
    h = ddtk.read_header(files[0])
    assert ddtk.read_header(files)["nsamples"] == ddtk.read_header(files[-1])["nsamples"] + \
        sum(ddtk.read_header(f)["nsamples"] for f in files[:-1])
    with ddtk.Reader(files) as r:
        assert r.nsamples > h["nsamples"] and r.header["paths"] == files
        blk = r.read_block()
    plan = ddtk.Plan(files, dms=DMS)
    assert same_bytes(plan.execute(blk), ref)
    parts = []
    plan.stream(files, lambda t0, x: parts.append(x.copy()))
    assert same_bytes(np.concatenate(parts, axis=1), ref)


def test_progress_reaches_a_python_callable(tmp, rfi_fil):
    calls = []
    nsamp = ddtk.read_header(rfi_fil)["nsamples"]
    ddtk.dedisperse(rfi_fil, DMS, gulp=2048, progress=lambda *a: calls.append(a))
    stages = [c[0] for c in calls]
    assert stages[0] == "start" and stages[-1] == "end" and stages.count("update") >= 4
    done = [c[1] for c in calls]
    assert done == sorted(done) and calls[-1][1:] == (nsamp, nsamp)
    # from blocks the total is unknown (None)
    blk = ddtk.read_block(rfi_fil)
    calls.clear()
    ddtk.Plan(rfi_fil, dms=DMS).stream([blk[:, :10000], blk[:, 10000:]], lambda t0, x: None,
                                       progress=lambda *a: calls.append(a))
    assert calls[0][2] is None and calls[-1][0] == "end"

    def broken(stage, done, total):
        raise KeyError("progress broke")
    with pytest.raises(KeyError, match="progress broke"):
        ddtk.dedisperse(rfi_fil, DMS, progress=broken)
    # the handler is gone afterwards: a run without progress calls nothing
    calls.clear()
    ddtk.dedisperse(rfi_fil, DMS)
    assert calls == []


def test_bad_rfi_options(tmp, rfi_fil):
    with pytest.raises(ddtk.UsageError, match="rfi 'on'"):
        ddtk.dedisperse(rfi_fil, DMS, rfi="on")
    with pytest.raises(ddtk.UsageError, match="rfi_clip goes with rfi='auto'"):
        ddtk.dedisperse(rfi_fil, DMS, rfi_clip=3)
    with pytest.raises(ddtk.SystemError_, match="nothing.mask"):
        ddtk.dedisperse(rfi_fil, DMS, mask=tmp / "nothing.mask")
    (tmp / "bad.mask").write_bytes(b"\0" * 20)
    with pytest.raises(ddtk.DataError, match="bad.mask"):
        ddtk.dedisperse(rfi_fil, DMS, mask=tmp / "bad.mask")
    blk = ddtk.read_block(rfi_fil)
    with pytest.raises(ddtk.UsageError, match="give a path"):
        ddtk.Plan(rfi_fil, dms=DMS).stream([blk], lambda t0, x: None, rfi="auto")
