"""Nothing leaks: the process's resident memory stays flat over 1,000 plan
create / execute / destroy cycles and over searches, and plans left to the
collector are freed.

Large blocks are mmapped and returned at once (mallopt), so glibc's moving
mmap threshold cannot turn freed outputs into a one-time step of heap; and a
second batch of 1,000 cycles must be flat too, where a leak would grow again."""

import ctypes
import gc

import numpy as np

import ddtk

FREQS = 1500.0 - np.arange(64) * 0.5
M_MMAP_THRESHOLD = -3
ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, 64 * 1024)


def rss_kib():
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4


def cycle(block):
    p = ddtk.Plan(freqs=FREQS, tsamp=64e-6, nbits=8, dms=np.arange(0, 40, 2.0),
                  backend="cpu", threads=1, wisdom=False)
    out = p.execute(block)
    p.close()
    return out


def test_rss_flat_over_1000_plan_cycles():
    rng = np.random.default_rng(1)
    block = rng.integers(0, 256, (4096, 64), dtype=np.uint8)
    first = cycle(block)
    for _ in range(200):
        cycle(block)
    rss = [rss_kib()]
    for _ in range(2):
        for _ in range(1000):
            assert cycle(block).shape == first.shape
        rss.append(rss_kib())
    # a leaked plan (delay table 20 x 64 int32 and more) or output (20 x
    # ~4000 floats) per cycle would be 5 MiB and more per batch
    grown = [b - a for a, b in zip(rss, rss[1:])]
    assert max(grown) < 1024, f"RSS grew {grown} KiB over two batches of 1000 cycles"


def test_plans_are_freed_when_collected():
    block = np.zeros((2048, 64), np.uint8)

    def batch():
        for _ in range(200):
            ddtk.Plan(freqs=FREQS, tsamp=64e-6, nbits=8, dms=np.arange(0, 200, 0.5),
                      threads=1, wisdom=False).execute(block)

    batch()
    before = rss_kib()
    batch()
    # each plan's delay table alone is 400 x 64 int32 (100 KiB): 20 MiB a batch
    assert rss_kib() - before < 2048


def test_rss_flat_over_searches():
    """The searcher and its candidate arrays (library memory, copied out and
    freed) over 2 x 500 searches of 4 series with a pulse each: a leaked
    searcher (its baseline window's buffers, 4 x 1562 samples and more)
    would be 10 MiB and more a batch."""
    rng = np.random.default_rng(2)
    series = rng.normal(0, 1, (4, 2048)).astype(np.float32)
    series[:, 1000:1004] += 8
    dms = np.arange(0, 8, 2.0)

    def search():
        return ddtk.single_pulse_search(series, dms, 64e-6, baseline=0.1, max_width=16)

    first = search()
    assert first.size >= 1
    for _ in range(100):
        search()
    rss = [rss_kib()]
    for _ in range(2):
        for _ in range(500):
            assert search().size == first.size
        rss.append(rss_kib())
    grown = [b - a for a, b in zip(rss, rss[1:])]
    assert max(grown) < 1024, f"RSS grew {grown} KiB over two batches of 500 searches"
