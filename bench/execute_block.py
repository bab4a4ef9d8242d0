#!/usr/bin/env python3
"""The Python side of bench/python: ddtk.Plan.execute on the block
execute_block.c builds (1024 channels, 8-bit, NSAMPS spectra, DM 0-1000
tolerance list: 1196 DMs), timed the same way.

Usage: execute_block.py BACKEND THREADS REPS [NSAMPS]
Prints one line per timed execute: "python WALL CPU" (seconds of wall clock
and of the process's CPU time).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402

import ddtk  # noqa: E402

NCHANS = 1024


def main():
    backend, threads, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    nsamps = int(sys.argv[4]) if len(sys.argv) > 4 else 65536
    freqs = 1581.8 - 0.390625 * np.arange(NCHANS)
    dms = ddtk.dm_list(0, 1000, freqs=freqs, tsamp=64e-6)
    # the C side's generator, vectorised: x <- x * 1103515245 + 12345 (mod 2^32), top byte
    block = np.empty(nsamps * NCHANS, np.uint8)
    a, c = np.uint64(1103515245), np.uint64(12345)
    x = np.uint64(1)
    step = 1 << 16
    mult, add = np.empty(step, np.uint64), np.empty(step, np.uint64)
    m, k = np.uint64(1), np.uint64(0)
    for i in range(step):   # x_{i+1} = mult[i] * x_0 + add[i]
        m, k = (m * a) & np.uint64(0xFFFFFFFF), (k * a + c) & np.uint64(0xFFFFFFFF)
        mult[i], add[i] = m, k
    for j in range(0, block.size, step):
        xs = (mult * x + add) & np.uint64(0xFFFFFFFF)
        n = min(step, block.size - j)
        block[j:j + n] = (xs[:n] >> np.uint64(24)).astype(np.uint8)
        x = xs[-1]
    block = block.reshape(nsamps, NCHANS)
    plan = ddtk.Plan(freqs=freqs, tsamp=64e-6, nbits=8, chan_bw=0.390625, dms=dms,
                     backend=backend, threads=threads, wisdom=False)
    out = np.empty((plan.ndm, int(plan.nout(nsamps)[0])), np.float32)
    print(f"python: {plan.ndm} DMs x {out.shape[1]} samples, max delay {plan.max_delay}",
          file=sys.stderr)
    for r in range(reps + 1):   # the first is a warm-up
        t0, c0 = time.perf_counter(), time.process_time()
        plan.execute(block, out=out)
        if r:
            print(f"python {time.perf_counter() - t0:.6f} {time.process_time() - c0:.6f}",
                  flush=True)


if __name__ == "__main__":
    main()
