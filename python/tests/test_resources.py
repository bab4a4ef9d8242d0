"""Nothing leaks: the process's resident memory stays flat over 1,000 plan
create / execute / destroy cycles (and fdas plans), once the first cycles have
warmed the allocator."""

import gc

import numpy as np

import ddtk

FREQS = 1500.0 - np.arange(64) * 0.5


def rss_kib():
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
    for _ in range(100):
        cycle(block)
    gc.collect()
    before = rss_kib()
    for _ in range(1000):
        assert cycle(block).shape == first.shape
    gc.collect()
    grown = rss_kib() - before
    # a leak of a plan's delay table (20 x 64 int32) or output (20 x ~4000
    # floats) per cycle would be 5 MiB and more
    assert grown < 1024, f"RSS grew {grown} KiB over 1000 cycles"


def test_plans_are_freed_when_collected():
    block = np.zeros((2048, 64), np.uint8)
    gc.collect()
    before = rss_kib()
    for _ in range(300):
        ddtk.Plan(freqs=FREQS, tsamp=64e-6, nbits=8, dms=np.arange(0, 200, 0.5),
                  threads=1, wisdom=False).execute(block)
    gc.collect()
    assert rss_kib() - before < 4096
