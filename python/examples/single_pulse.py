#!/usr/bin/env python3
"""single_pulse.py - a single-pulse search from Python, in bounded memory.

    python3 single_pulse.py [FILE ...] [--dm-max DM] [--snr S] [--rfi auto]
                            [--mask FILE.mask] [-o cands.cand]

Without FILE, simulates 3 s of a 256-channel 8-bit observation (1500 MHz
down to 1400 MHz, 256 us) with NumPy, holding bursts at DM 80 (t 0.5 s) and
DM 250 (t 1.6 s), and streams it to the library in blocks of 4096 spectra
from a generator, as a live source would. With FILEs (a filterbank, or the
PSRFITS files of one observation), streams them from disk, cleaned with
--rfi auto or an rfifind --mask if asked, with a progress line.

Either way every DM of the tools' tolerance list over 0..--dm-max is
dedispersed and searched as it is made (ddtk.Plan.stream with search=: the
candidates dd_direct --search would write), and the candidates are printed,
brightest first; -o writes them as Heimdall's .cand lines.
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

NCHANS, TSAMP, TOBS = 256, 256e-6, 3.0
BURSTS = [(80.0, 0.5, 20), (250.0, 1.6, 12)]    # DM, arrival at the top (s), height


def simulate(freqs, block=4096):
    """Noise with dispersed bursts, made and handed on block by block
    (samples x channels, uint8): only one block is ever in memory."""
    rng = np.random.default_rng(3)
    nsamps = int(TOBS / TSAMP)
    arrivals = []
    for dm, t, height in BURSTS:
        delay = 4148.741601 * dm * (freqs ** -2 - freqs[0] ** -2)
        arrivals.append((np.round((t + delay) / TSAMP).astype(int), height))
    for a in range(0, nsamps, block):
        n = min(block, nsamps - a)
        x = rng.normal(100, 10, (n, NCHANS))
        for samp, height in arrivals:
            for w in range(3):                  # three samples wide
                hit = (samp + w >= a) & (samp + w < a + n)
                x[samp[hit] + w - a, np.nonzero(hit)[0]] += height
        yield np.clip(x, 0, 255).astype(np.uint8)


def progress(stage, done, total):
    if stage == "end":
        print(file=sys.stderr)
    elif total:
        print(f"\r{done}/{total} spectra", end="", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--dm-max", type=float, default=400.0)
    ap.add_argument("--snr", type=float, default=8.0)
    ap.add_argument("--rfi", choices=["auto", "none"])
    ap.add_argument("--mask", help="a PRESTO rfifind mask")
    ap.add_argument("-o", "--output", help="write the candidates as a .cand file")
    a = ap.parse_args()

    search = {"snr": a.snr}
    if a.files:
        plan = ddtk.Plan(a.files if len(a.files) > 1 else a.files[0], dm_range=(0, a.dm_max))
        run = plan.stream(a.files, search=search, rfi=a.rfi, mask=a.mask,
                          progress=progress if sys.stderr.isatty() else None)
    else:
        if a.rfi or a.mask:
            ap.error("--rfi and --mask clean files")
        freqs = 1500.0 - np.arange(NCHANS) * 100.0 / NCHANS
        plan = ddtk.Plan(freqs=freqs, tsamp=TSAMP, nbits=8, dm_range=(0, a.dm_max))
        run = plan.stream(simulate(freqs), search=search)
    cands = np.sort(run["candidates"], order="snr")[::-1]
    print(f"{plan!r}")
    print(f"{run['nin']} spectra, {run['ndm']} DMs on the {run['backend']} in {run['wall']:.2f} s"
          f"; {run['giants']} giants -> {cands.size} candidates (S/N >= {a.snr:g})")
    if "rfi" in run:
        r = run["rfi"]
        print(f"RFI excision replaced {100 * r['samples_masked'] / max(r['samples'], 1):.3g}% "
              f"of the samples")
    print(f"{'S/N':>7} {'time (s)':>9} {'DM':>8} {'width':>6} {'members':>8}")
    for c in cands:
        print(f"{c['snr']:7.1f} {c['time']:9.4f} {c['dm']:8.2f} {c['width']:6d} "
              f"{c['members']:8d}")
    if a.output:
        ddtk.write_candidates(a.output, run["candidates"])
        print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
