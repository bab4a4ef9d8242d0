"""DM planning: tolerance-spaced and linear DM lists (as the dd_* tools make
them), time-scrunch factors past the diagonal DM, and PRESTO DDplan-style
ranges (include/dmplan.h)."""

import ctypes

import numpy as np

from . import _lib
from ._lib import lib

KDM = 4148.741601


def _band(header, freqs, tsamp):
    if header is not None:
        freqs = header["freqs"] if freqs is None else freqs
        tsamp = header["tsamp"] if tsamp is None else tsamp
    if freqs is None or tsamp is None:
        raise _lib.UsageError("give a header or freqs and tsamp", _lib.EUSAGE)
    f = np.asarray(freqs, dtype=np.float64).reshape(-1)
    if f.size < 1:
        raise _lib.UsageError("freqs: at least one channel", _lib.EUSAGE)
    return f, float(tsamp)


def _take(dl):
    try:
        return np.ctypeslib.as_array(dl.dm, (dl.n,)).copy() if dl.n else np.empty(0)
    finally:
        lib.ddtk_dmlist_free(ctypes.byref(dl))


def dm_list(lo, hi, *, header=None, freqs=None, tsamp=None, step=None, tol=1.25,
            pulse_width=40.0, chan_bw=None):
    """The DM trials from lo to hi (pc cm^-3) that ``dd_direct --dm-min lo
    --dm-max hi`` searches: with ``step``, lo, lo + step, ... up to hi;
    otherwise the tolerance list (each DM's smearing within ``tol`` times
    the previous one's, for a pulse of ``pulse_width`` µs), for the band of
    ``header`` (a dict from read_header) or of ``freqs`` (MHz) and ``tsamp``
    (s). Returns a float64 array."""
    dl = _lib.DmList()
    if step is not None:
        _lib.check(lib.ddtk_dmlist_range(ctypes.byref(dl), float(lo), float(hi), float(step)))
        return _take(dl)
    f, ts = _band(header, freqs, tsamp)
    fmin, fmax = float(f.min()), float(f.max())
    if chan_bw is None:
        chan_bw = (fmax - fmin) / (f.size - 1) if f.size > 1 else \
            abs(header.get("foff", 0)) if header else 0
    rc = lib.ddtk_dmlist_tol(ctypes.byref(dl), float(lo), float(hi), ts, float(pulse_width),
                             float(tol), 0.5 * (fmin + fmax), float(chan_bw), f.size)
    if rc:
        lib.ddtk_dmlist_free(ctypes.byref(dl))
        _lib.check(rc)
    return _take(dl)


def _obs(f, tsamp, kdm, nsamples=0, chan_bw=1.0):
    """The observation as ddtk_obs_from_header sets it: from the highest
    channel down in equal steps."""
    o = _lib.Obs()
    fmin, fmax = float(f.min()), float(f.max())
    foff = (fmin - fmax) / (f.size - 1) if f.size > 1 else 0.0
    _lib.check(lib.ddtk_obs_init(ctypes.byref(o), f.size, fmax, foff or -abs(chan_bw),
                                 float(tsamp), int(nsamples), float(kdm)))
    return o


def diagonal_dm(*, header=None, freqs=None, tsamp=None, kdm=KDM):
    """The DM at which one channel's dispersion sweep (at the band centre)
    equals one sample."""
    f, ts = _band(header, freqs, tsamp)
    return lib.ddtk_diagonal_dm(ctypes.byref(_obs(f, ts, kdm)))


def scrunch_factors(dms, *, header=None, freqs=None, tsamp=None, kdm=KDM):
    """Each DM's time-scrunch factor as ``--scrunch auto`` picks it (2^k past
    2^k times the diagonal DM); an int32 array."""
    f, ts = _band(header, freqs, tsamp)
    o = _obs(f, ts, kdm)
    return np.array([lib.ddtk_scrunch_factor(ctypes.byref(o), float(d))
                     for d in np.atleast_1d(dms)], dtype=np.intc)


ROW_DTYPE = np.dtype([("dm_lo", "f8"), ("dm_hi", "f8"), ("dm_step", "f8"),
                      ("downsamp", "i4"), ("ndm", "i4"), ("dms_per_sub", "i4")])


def dm_ranges(lo, hi, *, header=None, freqs=None, tsamp=None, nsub=0, nsamples=0, kdm=KDM):
    """PRESTO DDplan.py's plan from lo to hi, as ``ddplan`` makes it: rows
    (a structured array of dm_lo, dm_hi, dm_step, downsamp, ndm,
    dms_per_sub), and the DM list with each DM's scrunch factor, ready for
    ``Plan(dms=..., downsamp=...)``. Returns (rows, dms, downsamp)."""
    f, ts = _band(header, freqs, tsamp)
    o = _obs(f, ts, kdm, nsamples)
    p = _lib.DmPlan()
    dl = _lib.DmList()
    ds = ctypes.POINTER(ctypes.c_int)()
    try:
        _lib.check(lib.ddtk_dmplan_ranges(ctypes.byref(p), ctypes.byref(o), float(lo),
                                          float(hi), int(nsub)))
        rows = np.array([(r.dm_lo, r.dm_hi, r.dm_step, r.downsamp, r.ndm, r.dms_per_sub)
                         for r in (p.row[i] for i in range(p.n))], dtype=ROW_DTYPE)
        _lib.check(lib.ddtk_dmplan_expand(ctypes.byref(p), ctypes.byref(dl), ctypes.byref(ds)))
        down = np.ctypeslib.as_array(ds, (dl.n,)).astype(np.intc) if dl.n else \
            np.empty(0, np.intc)
        return rows, _take(dl), down
    finally:
        if ds:
            _lib.libc.free(ctypes.cast(ds, ctypes.c_void_p))
        lib.ddtk_dmlist_free(ctypes.byref(dl))
        lib.ddtk_dmplan_free(ctypes.byref(p))
