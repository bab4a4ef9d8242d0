"""Series from Python equal the tools' byte for byte: ddtk.dedisperse and
Plan.execute/stream against dd_direct over every nbits (gulp boundaries
included), Plan(algorithm="subband") against dd_subband and "tree" against
dd_tree; the DM lists against the tools' own."""

import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import ddtk
from conftest import REPO, fbsim, read_tim, same_bytes, tool

DMS = [0.0, 12.5, 50.0, 77.7, 120.0]


def write_dms(path, dms):
    """A --dm-list file of dms, as Python floats (NumPy 2 writes np.float64(...))."""
    path.write_text("".join(f"{float(d)!r}\n" for d in dms))
    return path


def dd_direct_series(tmp, fil, dms, *extra):
    write_dms(tmp / "dms.txt", dms)
    out = tmp / "ref"
    out.mkdir(exist_ok=True)
    tool("dd_direct", "--no-baseline", fil, "--dm-list", tmp / "dms.txt", "--prefix", out / "x", "-q", *extra)
    return [read_tim(out / f"x_DM{d:.2f}.tim")[1] for d in dms]


@pytest.mark.parametrize("nbits", [1, 2, 4, 8, 16, 32])
def test_dedisperse_equals_dd_direct(tmp, nbits):
    fil = fbsim(tmp / "a.fil", nchans=48, nbits=nbits, tsamp=0.000256, nsamples=12345,
                fch1=1400, foff=-2, pulse="1.5,50,0.002,30")
    ref = dd_direct_series(tmp, fil, DMS)
    # gulps of 1000 outputs: a dozen boundaries, none on a byte for sub-byte samples
    got = ddtk.dedisperse(fil, DMS, gulp=1000)
    assert got.shape == (len(DMS), ref[0].size) and got.dtype == np.float32
    for i in range(len(DMS)):
        assert same_bytes(got[i], ref[i]), f"DM {DMS[i]}"
    # the whole file in one execute, from the unpacked channels x samples block
    plan = ddtk.Plan(ddtk.read_header(fil), dms=DMS, backend="cpu")
    assert same_bytes(plan.execute(ddtk.read_block(fil)), got)
    # and from the samples as the file holds them
    with ddtk.Reader(fil) as r:
        raw = r.read()
        if nbits < 8:
            assert raw.dtype == np.uint8 and raw.ndim == 1
            with pytest.raises(ValueError, match="nsamps="):
                plan.execute(raw)
        assert same_bytes(plan.execute(raw, nsamps=12345 if nbits < 8 else None), got)
    # the pulse is at DM 50
    assert DMS[int(np.argmax(got.max(axis=1)))] == 50.0


def test_execute_reads_the_block_in_place_and_writes_into_out(tmp):
    fil = fbsim(tmp / "a.fil", nchans=64, nbits=8, nsamples=4000)
    ref = dd_direct_series(tmp, fil, DMS)
    with ddtk.Reader(fil) as r:
        raw = r.read()                         # (samples, nchans) uint8, as the file holds it
        blk = r.read_block()                   # its transpose
    assert raw.shape == (4000, 64) and blk.shape == (64, 4000)
    assert blk.base is not None and blk.T.flags.c_contiguous   # a view, time-major
    plan = ddtk.Plan(fil, dms=DMS)
    big = np.full((len(DMS), ref[0].size + 10), -1, np.float32)
    res = plan.execute(raw, out=big[:, 5:])
    assert np.shares_memory(res, big)
    for i in range(len(DMS)):
        assert same_bytes(big[i, 5:5 + ref[i].size], ref[i])
    assert np.all(big[:, :5] == -1) and np.all(big[:, 5 + ref[0].size:] == -1)
    # a channel-major C-ordered block (one copy) gives the same
    assert same_bytes(plan.execute(np.ascontiguousarray(blk)), plan.execute(blk))


def test_stream_file_and_iterable_in_bounded_gulps(tmp):
    fil = fbsim(tmp / "a.fil", nchans=32, nbits=4, nsamples=9000, pulse="1,40,0.002,20")
    ref = np.stack(dd_direct_series(tmp, fil, DMS))
    plan = ddtk.Plan(fil, dms=DMS, gulp=700)
    parts, widths = [], []

    def keep(t0, series):
        assert series.dtype == np.float32 and series.shape[0] == len(DMS)
        parts.append((t0, series.copy()))
        widths.append(series.shape[1])

    stats = plan.stream(fil, keep)
    # the engine rounds the gulp up to its alignment (a multiple of 64 spectra)
    assert stats["nout"] == ref.shape[1] and max(widths) < 700 + 64 and len(widths) > 5
    got = np.concatenate([p for _, p in parts], axis=1)
    assert [t for t, _ in parts] == list(np.cumsum([0] + widths[:-1]))
    assert same_bytes(got, ref)
    # an iterable of unpacked blocks of uneven sizes, some shorter than the delay
    values = ddtk.read_block(fil).T            # (samples, nchans)
    cuts = [0, 5, 300, 301, 2500, 7000, 9000]
    parts.clear()
    plan.stream((values[a:b] for a, b in zip(cuts, cuts[1:])), keep)
    assert same_bytes(np.concatenate([p for _, p in parts], axis=1), ref)


def test_tolerance_list_and_linear_list_equal_dd_direct(tmp):
    fil = fbsim(tmp / "a.fil", nchans=128, nbits=8, tsamp=0.000128, nsamples=3000,
                fch1=1500, foff=-0.5)
    out = tmp / "tol"
    out.mkdir()
    tool("dd_direct", "--no-baseline", fil, "--dm-min", 0, "--dm-max", 80, "--prefix", out / "x", "-q")
    tool_dms = sorted(read_tim(f)[0]["refdm"] for f in glob.glob(str(out / "*.tim")))
    dms = ddtk.dm_list(0, 80, header=ddtk.read_header(fil))
    assert len(dms) > 20 and list(dms) == tool_dms
    plan = ddtk.Plan(fil, dm_range=(0, 80))
    assert np.array_equal(plan.dms, dms)
    assert list(ddtk.dm_list(0, 1, step=0.25)) == [0, 0.25, 0.5, 0.75, 1.0]


def test_subband_equals_dd_subband(tmp):
    fil = fbsim(tmp / "a.fil", nchans=128, nbits=8, tsamp=0.000256, nsamples=8000,
                pulse="1,60,0.002,25")
    dms = list(np.arange(0, 100, 2.0))
    write_dms(tmp / "dms.txt", dms)
    (tmp / "sb").mkdir()
    tool("dd_subband", "--no-baseline", fil, "--dm-list", tmp / "dms.txt", "--nsub", 16, "--prefix",
         tmp / "sb" / "x", "-q")
    plan = ddtk.Plan(fil, dms=dms, algorithm="subband", params={"nsub": 16})
    got = plan.execute(ddtk.read_block(fil))
    for i, d in enumerate(dms):
        assert same_bytes(got[i], read_tim(tmp / "sb" / f"x_DM{d:.2f}.tim")[1]), f"DM {d}"
    # the library's streaming (the tool's path) in gulps gives the same
    assert same_bytes(ddtk.dedisperse(fil, dms, algorithm="subband", params={"nsub": 16},
                                      gulp=3000), got)
    # and differs from the direct algorithm's (a test that can fail)
    assert not same_bytes(got, ddtk.Plan(fil, dms=dms).execute(ddtk.read_block(fil)))


def test_tree_equals_dd_tree(tmp):
    fil = fbsim(tmp / "a.fil", nchans=64, nbits=8, tsamp=0.000256, nsamples=6000,
                fch1=1500, foff=-4, pulse="1,30,0.002,25")
    (tmp / "tr").mkdir()
    tool("dd_tree", "--no-baseline", fil, "--dm-max", 60, "--sub-chans", 8, "--scrunch", "none", "--prefix",
         tmp / "tr" / "x", "-q")
    ref = sorted((read_tim(f) for f in glob.glob(str(tmp / "tr" / "*.tim"))),
                 key=lambda ht: ht[0]["refdm"])
    dms = [h["refdm"] for h, _ in ref]
    assert len(dms) > 10
    plan = ddtk.Plan(fil, dms=dms, algorithm="tree", params={"sub_chans": 8})
    assert plan.algorithm == "tree"
    got = plan.execute(ddtk.read_block(fil))
    for i, (h, x) in enumerate(ref):
        assert same_bytes(got[i, :x.size], x), f"DM {dms[i]}"


def test_scrunched_plan_gives_each_dms_series(tmp):
    fil = fbsim(tmp / "a.fil", nchans=64, nbits=8, tsamp=0.000064, nsamples=20000,
                fch1=1500, foff=-4)
    hdr = ddtk.read_header(fil)
    rows, dms, ds = ddtk.dm_ranges(0, 300, header=hdr)
    assert rows.size >= 2 and dms.size == ds.size and ds.max() > 1
    assert dms.size == rows["ndm"].sum() and np.all(np.diff(dms) > 0)
    plan = ddtk.Plan(hdr, dms=dms, downsamp=ds)
    series = plan.execute(ddtk.read_block(fil))
    assert [s.size for s in series] == list(plan.nout(20000))
    # dd_direct --plan with the same rows writes the same series
    (tmp / "p.tsv").write_text("dm_lo\tdm_hi\tdm_step\tdownsamp\tndm\n" + "".join(
        f"{float(r['dm_lo'])!r}\t{float(r['dm_hi'])!r}\t{float(r['dm_step'])!r}\t{r['downsamp']}\t{r['ndm']}\n"
        for r in rows))
    (tmp / "o").mkdir()
    tool("dd_direct", "--no-baseline", fil, "--plan", tmp / "p.tsv", "--prefix", tmp / "o" / "x", "-q")
    for i in (0, dms.size // 2, dms.size - 1):
        h, x = read_tim(tmp / "o" / f"x_DM{dms[i]:.2f}.tim")
        assert same_bytes(series[i], x), f"DM {dms[i]}"


def test_stream_per_dm_scrunched_and_a_failing_callback(tmp):
    fil = fbsim(tmp / "a.fil", nchans=64, nbits=8, tsamp=0.000064, nsamples=20000,
                fch1=1500, foff=-4)
    dms = np.arange(0, 400, 20.0)
    plan = ddtk.Plan(fil, dms=dms, scrunch=True, gulp=4096)
    assert plan.scrunched
    want = ddtk.dedisperse(fil, dms, scrunch=True)
    got = [[] for _ in dms]

    def keep(dm, offset, x):
        assert offset == sum(p.size for p in got[dm])
        got[dm].append(x.copy())

    plan.stream(fil, keep, per_dm=True)
    for i in range(dms.size):
        assert same_bytes(np.concatenate(got[i]), want[i]), f"DM {dms[i]}"
    with pytest.raises(ddtk.UsageError, match="per_dm"):
        plan.stream(fil, keep)

    class Stop(Exception):
        pass

    def stop(t0, series):
        raise Stop("enough")

    with pytest.raises(Stop):
        ddtk.Plan(fil, dms=[0, 10]).stream(fil, stop)
    with pytest.raises(TypeError, match="dtype float64"):
        ddtk.Plan(fil, dms=[0, 10]).stream([np.zeros((100, 64))], lambda t, s: None)


def test_stream_from_standard_input(tmp):
    fil = fbsim(tmp / "a.fil", nchans=32, nbits=8, nsamples=5000)
    ref = np.stack(dd_direct_series(tmp, fil, DMS))
    code = ("import ddtk, numpy as np, sys\n"
            f"p = ddtk.Plan({fil!r}, dms={DMS!r}, gulp=1000)\n"
            "parts = []\n"
            "p.stream('-', lambda t0, s: parts.append(s.copy()))\n"
            "np.concatenate(parts, axis=1).tofile(sys.argv[1])\n")
    with open(fil, "rb") as stdin:
        r = subprocess.run([sys.executable, "-c", code, str(tmp / "out.f32")], stdin=stdin,
                           capture_output=True, text=True, env=dict(os.environ,
                           PYTHONPATH=os.path.join(REPO, "python")))
    assert r.returncode == 0, r.stderr
    got = np.fromfile(tmp / "out.f32", np.float32).reshape(len(DMS), -1)
    assert same_bytes(got, ref)


@pytest.mark.parametrize("variant", [
    {"freq_table": True, "nbits": 8},
    {"nifs": 2, "nbits": 8},
    {"signed": True, "nbits": 16},
    {"nbits": 8, "foff": 1.5, "fch1": 1300},      # ascending band
])
def test_header_variants_equal_dd_direct(tmp, variant):
    opts = dict(nchans=40, tsamp=0.000256, nsamples=6000, fch1=1450, foff=-1.5,
                pulse="0.8,60,0.002,25")
    opts.update(variant)
    fil = fbsim(tmp / "a.fil", **opts)
    ref = np.stack(dd_direct_series(tmp, fil, DMS))
    hdr = ddtk.read_header(fil)
    assert hdr["nifs"] == variant.get("nifs", 1) and hdr["freqs"].size == 40
    assert same_bytes(ddtk.dedisperse(fil, DMS), ref)
    blk = ddtk.read_block(fil)
    assert blk.shape[0] == 40 and blk.shape[-1] == 6000
    assert same_bytes(ddtk.Plan(hdr, dms=DMS).execute(blk), ref)


def test_killed_channels_equal_dd_direct_killfile(tmp):
    fil = fbsim(tmp / "a.fil", nchans=64, nbits=8, nsamples=4000, pulse="0.5,30,0.002,25")
    (tmp / "kill.txt").write_text("0:9,30,50:63\n")
    ref = np.stack(dd_direct_series(tmp, fil, DMS, "--killfile", tmp / "kill.txt"))
    by_file = ddtk.dedisperse(fil, DMS, kill=str(tmp / "kill.txt"))
    mask = np.zeros(64, bool)
    mask[0:10], mask[30], mask[50:64] = True, True, True
    plan = ddtk.Plan(fil, dms=DMS, kill=mask)
    assert plan.nlive == 64 - 25
    assert same_bytes(by_file, ref) and same_bytes(plan.execute(ddtk.read_block(fil)), ref)
    assert not same_bytes(ddtk.dedisperse(fil, DMS), ref)
