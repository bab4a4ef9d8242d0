"""The single-pulse search from Python: ddtk.single_pulse_search on series
gives spsearch's candidates on the same written series (their .cand text
byte for byte), Plan.stream(search=...) gives dd_direct --search's (and
dd_subband's, scrunched dd_tree's) whatever the gulp, with or without a
callback, on the CPU and the GPU; the searcher fed in pieces or by several
threads; candidates read back from a .cand file and written as PRESTO's
.singlepulse; bad parameters raise the library's message."""

import numpy as np
import pytest

import ddtk
from conftest import fbsim, read_tim, tool

DMS = np.arange(0, 808, 8.0)          # search.bats's sweep: 0..800 step 8
GPU = pytest.mark.skipif(not ddtk.gpu_usable(0)[0], reason=f"no GPU: {ddtk.gpu_usable(0)[1]}")


@pytest.fixture(scope="module")
def bursts(tmp_path_factory):
    """search.bats's observation: bursts at DM 100 (0.2 s, 1 ms), 400 (0.655 s,
    4 ms; output sample 10240, a gulp boundary) and 700 (1.1 s, 0.3 ms)."""
    d = tmp_path_factory.mktemp("bursts")
    return fbsim(d / "b.fil", nchans=128, foff=-2, tobs=2, seed=9,
                 pulse=["0.2,100,0.001,12", "0.65536,400,0.004,6", "1.1,700,0.0003,25"])


def dd_search(tmp, tool_name, path, *extra):
    """The tool's --search candidates (text) and written series (dict DM -> .tim path)."""
    out = tmp / f"{tool_name}{len(list(tmp.iterdir()))}"
    out.mkdir()
    tool(tool_name, path, *extra, "--prefix", out / "b", "--search", "--no-baseline", "-q")
    return (out / "b.cand").read_text(), sorted(out.glob("*.tim"))


def test_series_search_equals_spsearch_on_the_written_series(tmp, bursts):
    text, tims = dd_search(tmp, "dd_direct", bursts, "--dm-min", 0, "--dm-max", 800,
                           "--dm-step", 8)
    ref = tool("spsearch", "-q", *tims)
    assert ref == text and len(ref.splitlines()) == 3
    heads = [read_tim(t) for t in tims]
    dms = np.array([h["refdm"] for h, _ in heads])
    series = np.stack([x for _, x in heads])
    cands = ddtk.single_pulse_search(series, dms, heads[0][0]["tsamp"])
    assert cands.dtype == ddtk.SPS_CAND_DTYPE and cands.size == 3
    assert ddtk.format_candidates(cands) == ref
    # the bursts at their DM within a step, in time order
    assert np.all(np.abs(cands["dm"] - [100, 400, 700]) <= 8)
    assert np.all(np.diff(cands["time"]) > 0) and np.all(cands["snr"] >= 6)
    # the series in any order: the same candidates (DM indices count ascending DMs)
    perm = np.random.default_rng(1).permutation(dms.size)
    again = ddtk.single_pulse_search(series[perm], dms[perm], heads[0][0]["tsamp"])
    assert ddtk.format_candidates(again) == ref
    # a higher threshold keeps the brightest; a narrower max width still finds 3
    hi = ddtk.single_pulse_search(series, dms, heads[0][0]["tsamp"], snr=30)
    assert 0 < hi.size < 3 and set(hi["sample"]) <= set(cands["sample"])
    assert ddtk.format_candidates(hi) == tool("spsearch", "-q", "--snr", 30, *tims)


def test_fed_in_pieces_or_on_threads_the_same_candidates(tmp, bursts):
    dms = np.arange(0, 808, 8.0)
    series = ddtk.dedisperse(bursts, dms)
    tsamp = ddtk.read_header(bursts)["tsamp"]
    whole = ddtk.single_pulse_search(series, dms, tsamp, threads=1)
    assert np.array_equal(ddtk.single_pulse_search(series, dms, tsamp, threads=4), whole)
    with ddtk.SinglePulseSearch(dms, tsamp) as s:
        for a in range(0, series.shape[1], 3001):
            for i in range(dms.size):
                s.feed(i, series[i, a:a + 3001])
        pieces = s.finish()
        assert s.giants >= pieces.size
    assert np.array_equal(pieces, whole)
    # one series after another, each ended when it is whole, as spsearch does with files
    with ddtk.SinglePulseSearch(dms, tsamp) as s:
        for i in range(dms.size):
            s.feed(i, series[i])
            s.end(i)
        with pytest.raises(ddtk.UsageError, match="after its end"):
            s.feed(0, series[0, :10])
        assert np.array_equal(s.finish(), whole)


@pytest.mark.parametrize("gulp", [2048, 10240])
def test_stream_search_equals_dd_direct_search(tmp, bursts, gulp):
    text, _ = dd_search(tmp, "dd_direct", bursts, "--dm-min", 0, "--dm-max", 800,
                        "--dm-step", 8, "--gulp", gulp, "--backend", "cpu")
    plan = ddtk.Plan(bursts, dm_range=(0, 800), dm_step=8, gulp=gulp, backend="cpu")
    run = plan.stream(bursts, search=True)
    assert ddtk.format_candidates(run["candidates"]) == text
    assert run["giants"] >= run["candidates"].size == 3
    # with a callback too: the series it gets are the ones searched
    got = []
    run2 = plan.stream(bursts, lambda t0, x: got.append(x.copy()), search={"snr": 6})
    assert np.array_equal(run2["candidates"], run["candidates"])
    series = np.concatenate(got, axis=1)
    assert np.array_equal(ddtk.single_pulse_search(series, plan.dms, plan.tsamp),
                          run["candidates"])


def test_stream_search_options_are_the_tools(tmp, bursts):
    text, _ = dd_search(tmp, "dd_direct", bursts, "--dm-min", 0, "--dm-max", 800,
                        "--dm-step", 8, "--snr", 8, "--max-width", 64, "--search-window", 1)
    plan = ddtk.Plan(bursts, dm_range=(0, 800), dm_step=8)
    run = plan.stream(bursts, search=dict(snr=8, max_width=64, baseline=1.0))
    assert ddtk.format_candidates(run["candidates"]) == text
    assert np.all(run["candidates"]["width"] <= 64) and np.all(run["candidates"]["snr"] >= 8)
    dflt = ddtk.format_candidates(plan.stream(bursts, search=True)["candidates"])
    assert text != dflt                         # the options changed the candidates


def test_stream_search_subband_and_scrunched_tree(tmp, bursts):
    text, _ = dd_search(tmp, "dd_subband", bursts, "--dm-min", 0, "--dm-max", 800,
                        "--dm-step", 8)
    plan = ddtk.Plan(bursts, dm_range=(0, 800), dm_step=8, algorithm="subband")
    assert ddtk.format_candidates(plan.stream(bursts, search=True)["candidates"]) == text
    text, tims = dd_search(tmp, "dd_tree", bursts, "--dm-max", 450)   # bursts 100, 400
    heads = [ddtk.read_header(t) for t in tims]
    tree = ddtk.Plan(bursts, dms=[h["refdm"] for h in heads], algorithm="tree",
                     downsamp=[round(h["tsamp"] / tree_tsamp(bursts)) for h in heads])
    assert tree.scrunched
    run = tree.stream(bursts, search=True)
    assert ddtk.format_candidates(run["candidates"]) == text
    # the scrunched series searched from arrays, with their factors
    series = tree.execute(ddtk.read_block(bursts))
    cands = ddtk.single_pulse_search(series, tree.dms, tree.tsamp, downsamp=tree.downsamp)
    for dm in (100, 400):
        assert np.any(np.abs(cands["dm"] - dm) <= 12), cands


def tree_tsamp(path):
    return ddtk.read_header(path)["tsamp"]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=GPU)])
def test_stream_search_on_the_backend_equals_the_tool(tmp, bursts, backend):
    text, _ = dd_search(tmp, "dd_direct", bursts, "--dm-min", 0, "--dm-max", 800,
                        "--dm-step", 8, "--backend", backend)
    plan = ddtk.Plan(bursts, dm_range=(0, 800), dm_step=8, backend=backend)
    assert plan.backend == backend
    assert ddtk.format_candidates(plan.stream(bursts, search=True)["candidates"]) == text


def test_candidates_read_back_and_written(tmp, bursts):
    text, _ = dd_search(tmp, "dd_direct", bursts, "--dm-min", 0, "--dm-max", 800,
                        "--dm-step", 8)
    (tmp / "a.cand").write_text(text)
    c = ddtk.read_candidates(tmp / "a.cand")
    assert c.size == 3 and ddtk.format_candidates(c) == text
    ddtk.write_candidates(tmp / "b.cand", c)
    assert (tmp / "b.cand").read_text() == text
    assert ddtk.format_candidates(c[:0]) == ""


def test_presto_singlepulse_per_series_as_spsearch_writes(tmp, bursts):
    _, tims = dd_search(tmp, "dd_direct", bursts, "--dm-min", 0, "--dm-max", 800,
                        "--dm-step", 8, "--scrunch", "auto")
    (tmp / "sp").mkdir()
    tool("spsearch", "-q", "--format", "presto", "-o", tmp / "sp", *tims)
    heads = [read_tim(t) for t in tims]
    tsamp = min(h["tsamp"] for h, _ in heads)
    factors = [round(h["tsamp"] / tsamp) for h, _ in heads]
    cands = ddtk.single_pulse_search([x for _, x in heads], [h["refdm"] for h, _ in heads],
                                     tsamp, downsamp=factors)
    order = np.argsort([h["refdm"] for h, _ in heads], kind="stable")
    assert max(factors) > 1
    for rank, i in enumerate(order):          # dm_index counts ascending DMs
        ref = (tmp / "sp" / (tims[i].stem + ".singlepulse")).read_text()
        assert ddtk.format_candidates(cands, "presto", dm_index=rank, factor=factors[i]) == ref
    with pytest.raises(TypeError, match="give dm_index"):
        ddtk.format_candidates(cands, "presto")


def test_bad_search_arguments(bursts):
    x = np.zeros((2, 5000), np.float32)
    with pytest.raises(ddtk.UsageError, match="maximum width 3 is not a power of two"):
        ddtk.single_pulse_search(x, [0, 1], 0.001, max_width=3)
    with pytest.raises(ddtk.UsageError, match="S/N threshold -1 is not positive"):
        ddtk.single_pulse_search(x, [0, 1], 0.001, snr=-1)
    with pytest.raises(ValueError, match="2 series for 3 DMs"):
        ddtk.single_pulse_search(x, [0, 1, 2], 0.001)
    with pytest.raises(TypeError, match="float32"):
        ddtk.single_pulse_search(x.astype(np.float64), [0, 1], 0.001)
    plan = ddtk.Plan(bursts, dms=[0, 10])
    with pytest.raises(TypeError, match="unknown parameter 'width'"):
        plan.stream(bursts, search={"width": 4})
    with pytest.raises(TypeError, match="give a callback, or search="):
        plan.stream(bursts)
    with pytest.raises(ddtk.SystemError_, match="nothing.cand"):
        ddtk.read_candidates("/nonexistent/nothing.cand")
