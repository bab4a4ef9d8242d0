#!/usr/bin/env python3
"""bowtie.py - the DM-time "bow-tie" of a dispersed burst, from Python.

    python3 bowtie.py [FILE.fil] [--dm-max DM] [-o bowtie.png]

Without FILE, simulates 1 s of a 256-channel 8-bit observation (1500 MHz
down to 1400 MHz, 256 us) holding one burst at DM 150 with NumPy. Dedisperses
it over DM 0..--dm-max (default 300, the tools' tolerance list) with
ddtk.Plan.execute, prints the brightest DM, time and S/N, and draws the
DM-time plane around the burst: with matplotlib (if installed) into a PNG,
otherwise as text.
"""
import argparse
import os
import sys

import numpy as np

try:
    import ddtk
except ImportError:   # run from the source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import ddtk

NCHANS, TSAMP, NSAMPS, BURST_DM, BURST_T = 256, 256e-6, 4096, 150.0, 0.45


def simulate():
    """A block (samples x channels, uint8) of noise with a dispersed burst."""
    freqs = 1500.0 - np.arange(NCHANS) * 100.0 / NCHANS
    rng = np.random.default_rng(7)
    block = rng.normal(100, 10, (NSAMPS, NCHANS))
    delay = 4148.741601 * BURST_DM * (freqs ** -2 - freqs[0] ** -2)
    t = np.round((BURST_T + delay) / TSAMP).astype(int)
    block[t, np.arange(NCHANS)] += 25
    block[t + 1, np.arange(NCHANS)] += 15
    return np.clip(block, 0, 255).astype(np.uint8), freqs


def text_plot(plane, dms, t0):
    """Rows of DM bins and columns of samples, each the brightest S/N it
    covers, as shades."""
    shades = " .:-=+*#%@"
    edges = np.linspace(0, len(dms), min(24, len(dms)) + 1).astype(int)
    binned = np.array([plane[a:b].max(axis=0) for a, b in zip(edges, edges[1:])])
    v = np.clip(binned / binned.max(), 0, 0.999)
    print(f"DM (pc cm^-3) vs sample, {t0} to {t0 + plane.shape[1] - 1}; darker is brighter")
    for r in range(len(binned) - 1, -1, -1):
        row = "".join(shades[int(x * len(shades))] if x > 0 else " " for x in v[r])
        print(f"{dms[edges[r]]:7.1f} |{row}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--dm-max", type=float, default=300.0)
    ap.add_argument("-o", "--output", default="bowtie.png")
    ap.add_argument("--text", action="store_true", help="text plot even with matplotlib")
    a = ap.parse_args()

    if a.file:
        hdr = ddtk.read_header(a.file)
        plan = ddtk.Plan(hdr, dm_range=(0, a.dm_max))
        series = plan.execute(ddtk.read_block(a.file))
        tsamp = hdr["tsamp"]
    else:
        block, freqs = simulate()
        plan = ddtk.Plan(freqs=freqs, tsamp=TSAMP, nbits=8, dm_range=(0, a.dm_max))
        series = plan.execute(block)
        tsamp = TSAMP
    snr = (series - np.median(series, axis=1, keepdims=True)) / \
        (series.std(axis=1, keepdims=True) + 1e-9)
    d, t = np.unravel_index(np.argmax(snr), snr.shape)
    print(f"{plan!r}")
    print(f"brightest: DM {plan.dms[d]:.2f} pc cm^-3, t {t * tsamp:.4f} s, S/N {snr[d, t]:.1f}")

    t0, t1 = max(0, t - 36), min(series.shape[1], t + 36)
    plane = snr[:, t0:t1]
    try:
        if a.text:
            raise ImportError
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        text_plot(plane, plan.dms, t0)
        return
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.imshow(plane, aspect="auto", origin="lower", cmap="viridis",
              extent=[t0 * tsamp, t1 * tsamp, plan.dms[0], plan.dms[-1]])
    ax.set_xlabel("time (s)")
    ax.set_ylabel("DM (pc cm$^{-3}$)")
    ax.set_title(f"bow-tie: DM {plan.dms[d]:.1f}, S/N {snr[d, t]:.1f}")
    fig.savefig(a.output, dpi=100)
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
