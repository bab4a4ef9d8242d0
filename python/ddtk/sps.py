"""The single-pulse search (include/sps.h: spsearch's and ``dd_* --search``'s
searcher) on NumPy series: a running baseline and robust sigma, boxcars of
1, 2, 3, 4, 6, 8, ... samples up to the maximum width, a threshold, and the
giants of all DMs clustered friends-of-friends into one candidate per event.
Candidates come as a NumPy structured array of ``SPS_CAND_DTYPE`` (the
fields of ddtk_sps_cand), and can be written as the tools write them byte
for byte (Heimdall's .cand lines, PRESTO's .singlepulse) and read back
(.cand).

The search of a stream (``Plan.stream(..., search=...)``) is in plan.py:
this module holds the searcher of arrays and the parameters both take.
"""

import ctypes
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import _lib
from ._lib import lib

# ddtk_sps_cand's layout, field for field (offsets from the ctypes mirror).
SPS_CAND_DTYPE = np.dtype({
    "names": [n for n, _ in _lib.SpsCand._fields_],
    "formats": [{ctypes.c_int: "i4", ctypes.c_int64: "i8", ctypes.c_double: "f8"}[t]
                for _, t in _lib.SpsCand._fields_],
    "offsets": [getattr(_lib.SpsCand, n).offset for n, _ in _lib.SpsCand._fields_],
    "itemsize": ctypes.sizeof(_lib.SpsCand),
})

PARAMS = ("snr", "max_width", "baseline", "dm_tol", "width_tol", "time_tol")


def search_params(snr=None, max_width=None, baseline=None, dm_tol=None, width_tol=None,
                  time_tol=None):
    """The search's parameters (ddtk_sps_params), the library's defaults
    (spsearch's) where None: ``snr`` the threshold (6), ``max_width`` the
    widest boxcar in samples at the finest sample time (1024, a power of
    two), ``baseline`` the running baseline window in seconds (2;
    --search-window), and the clustering tolerances ``dm_tol`` (DM indices,
    5), ``width_tol`` (log2 widths, 24) and ``time_tol`` (boxcar widths, 0).
    The library checks the values when a search is made."""
    p = _lib.SpsParams()
    lib.ddtk_sps_params_init(ctypes.byref(p))
    given = dict(snr=snr, max_width=max_width, baseline=baseline, dm_tol=dm_tol,
                 width_tol=width_tol, time_tol=time_tol)
    for k, v in given.items():
        if v is not None:
            setattr(p, k, int(v) if k in ("max_width", "dm_tol", "width_tol") else float(v))
    return p


def params_of(search):
    """``Plan.stream``'s search argument as SpsParams: True (the defaults),
    a dict of search_params' keywords, or SpsParams."""
    if search is True:
        return search_params()
    if isinstance(search, dict):
        unknown = set(search) - set(PARAMS)
        if unknown:
            raise TypeError(f"search: unknown parameter {sorted(unknown)[0]!r} "
                            f"(expected {', '.join(PARAMS)})")
        return search_params(**search)
    if isinstance(search, _lib.SpsParams):
        return search
    raise TypeError(f"search: expected True, a dict of parameters or search_params(), "
                    f"got {type(search).__name__}")


def take_candidates(cands, n):
    """The library's malloc'd candidate array as SPS_CAND_DTYPE (a copy); frees it."""
    try:
        nbytes = n * SPS_CAND_DTYPE.itemsize
        return np.frombuffer(ctypes.string_at(cands, nbytes) if nbytes else b"",
                             SPS_CAND_DTYPE).copy()
    finally:
        _lib.libc.free(ctypes.cast(cands, ctypes.c_void_p))


class SinglePulseSearch(_lib.Closing):
    """A searcher of ``len(dms)`` series fed in pieces of any length (the
    same candidates whatever the pieces), for series too long to hold:
    ``feed(i, x)`` gives the next samples of series i (float32), in time
    order; ``end(i)`` ends series i early (its memory freed); ``finish()``
    ends every series and returns the candidates;
    ``giants`` counts the runs above the threshold.

    ``dms``: each series' DM; ``tsamp``: the finest sample time (s);
    ``downsamp``: each series' scrunch factor (a power of two; sampled at
    tsamp * factor), None for all 1. Other keywords: ``search_params``'.
    Candidates count DMs in ascending order of DM (``dm_index``), as
    spsearch counts its files: the series' own index when dms ascend."""

    def __init__(self, dms, tsamp, downsamp=None, **params):
        self._s, self._giants = None, 0
        d = np.ascontiguousarray(dms, dtype=np.float64).reshape(-1)
        if d.size < 1:
            raise _lib.UsageError("single-pulse search: no series", _lib.EUSAGE)
        order = np.argsort(d, kind="stable")
        self.rank = np.empty(d.size, np.intc)
        self.rank[order] = np.arange(d.size, dtype=np.intc)
        self.dms = d
        ds = None
        if downsamp is not None:
            ds = np.ascontiguousarray(downsamp, dtype=np.intc).reshape(-1)
            if ds.size != d.size:
                raise _lib.UsageError(f"downsamp: {ds.size} factors for {d.size} DMs",
                                      _lib.EUSAGE)
            ds = np.ascontiguousarray(ds[order])
        self.params = search_params(**params)
        s = ctypes.c_void_p()
        sorted_dms = np.ascontiguousarray(d[order])
        _lib.check(lib.ddtk_sps_create(
            ctypes.byref(s), ctypes.byref(self.params), d.size,
            sorted_dms.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            ds.ctypes.data_as(ctypes.POINTER(ctypes.c_int)) if ds is not None else None,
            float(tsamp)))
        self._s, self._destroy = s, lib.ddtk_sps_destroy     # kept for shutdown

    def _handle(self):
        if not self._s:
            raise ValueError("the search is finished or closed")
        return self._s

    def feed(self, i, x):
        """The next samples of series i (a 1-D float32 array)."""
        if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 1:
            raise TypeError("series: expected a 1-D float32 NumPy array")
        if not 0 <= i < self.dms.size:
            raise IndexError(f"series {i}: the search has {self.dms.size}")
        x = np.ascontiguousarray(x)
        _lib.check(lib.ddtk_sps_feed(self._handle(), int(self.rank[i]),
                                     x.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                     x.size))

    def end(self, i):
        """End series i now: its last block is searched and its samples are
        freed, so a search of series that come one after another (files)
        holds only those in flight; feeding it again is an error."""
        if not 0 <= i < self.dms.size:
            raise IndexError(f"series {i}: the search has {self.dms.size}")
        _lib.check(lib.ddtk_sps_end(self._handle(), int(self.rank[i])))

    @property
    def giants(self):
        """Giants (runs above the threshold, one per boxcar) found so far
        (blocks of the baseline window are searched once whole; every giant
        once finished)."""
        return self._giants if not self._s else int(lib.ddtk_sps_giants(self._s))

    def finish(self):
        """End every series (its last block searched) and cluster: the
        candidates, in order of sample then DM index (SPS_CAND_DTYPE).
        The searcher is closed afterwards (``giants`` is kept)."""
        c, n = ctypes.POINTER(_lib.SpsCand)(), ctypes.c_int64()
        try:
            _lib.check(lib.ddtk_sps_finish(self._handle(), ctypes.byref(c), ctypes.byref(n)))
            self._giants = int(lib.ddtk_sps_giants(self._s))
            return take_candidates(c, n.value)
        finally:
            self.close()

    def close(self):
        if self._s:
            self._destroy(self._s)
            self._s = None


def single_pulse_search(series, dms, tsamp, *, downsamp=None, snr=None, max_width=None,
                        baseline=None, dm_tol=None, width_tol=None, time_tol=None, threads=0):
    """Search dedispersed series for single pulses as spsearch searches the
    same series' files: ``series`` a float32 array (ndm, N) (``Plan.execute``
    or ``dedisperse``'s output) or a list of 1-D float32 arrays (a scrunched
    plan's, with ``downsamp`` their factors); ``dms`` their DMs; ``tsamp``
    the (finest) sample time in s. ``snr`` (6), ``max_width`` (1024 samples),
    ``baseline`` (2 s: --search-window), ``dm_tol``, ``width_tol``,
    ``time_tol``: see ``search_params``. ``threads``: series searched at
    once (0: one per CPU; the library searches each in its own call, with
    Python's lock released), as spsearch --threads.

    Returns the candidates (one per event) as a structured array of
    SPS_CAND_DTYPE: snr, sample (the boxcar's centre, finest samples from
    the start), time (s), width (samples), dm_index (in ascending DMs), dm,
    members (giants clustered), begin and end (the members' span)."""
    if isinstance(series, np.ndarray) and series.ndim == 2:
        rows = list(series)
    elif isinstance(series, (list, tuple)):
        rows = list(series)
    else:
        raise TypeError("series: expected a 2-D float32 array (DMs x samples) or a list of "
                        "1-D float32 arrays")
    d = np.atleast_1d(np.asarray(dms, dtype=np.float64))
    if len(rows) != d.size:
        raise ValueError(f"series: {len(rows)} series for {d.size} DMs")
    with SinglePulseSearch(d, tsamp, downsamp, snr=snr, max_width=max_width, baseline=baseline,
                           dm_tol=dm_tol, width_tol=width_tol, time_tol=time_tol) as s:
        n = min(len(rows), int(threads) if threads else os.cpu_count() or 1)
        if n <= 1:
            for i, x in enumerate(rows):
                s.feed(i, x)
        else:
            with ThreadPoolExecutor(n) as pool:
                list(pool.map(s.feed, range(len(rows)), rows))
        return s.finish()


# ---- Heimdall's .cand lines ---------------------------------------------------

def _as_cands(cands):
    c = np.ascontiguousarray(cands)
    if c.dtype != SPS_CAND_DTYPE:
        raise TypeError(f"candidates: dtype {c.dtype}, expected SPS_CAND_DTYPE")
    return c.reshape(-1)


def format_candidates(cands, format="heimdall", dm_index=None, factor=1):
    """The candidates as the tools write them, byte for byte: Heimdall's
    .cand lines (S/N, sample, time, log2 width, DM index, DM, members,
    begin, end: ``spsearch`` and ``dd_* --search``), or with
    ``format="presto"`` PRESTO's .singlepulse of one series (``spsearch
    --format presto``): the candidates of ``dm_index``, their samples and
    widths in that series' own samples (``factor``: its scrunch factor)."""
    c = _as_cands(cands)
    if format not in ("heimdall", "presto"):
        raise _lib.UsageError(f"format {format!r}: expected heimdall or presto", _lib.EUSAGE)
    if format == "presto" and dm_index is None:
        raise TypeError("format_candidates: presto's .singlepulse is one series': give dm_index")
    buf, size = ctypes.c_void_p(), ctypes.c_size_t()
    fp = _lib.libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not fp:
        raise _lib.SystemError_("format_candidates: out of memory")
    ptr = c.ctypes.data_as(ctypes.POINTER(_lib.SpsCand))
    if format == "heimdall":
        rc = lib.ddtk_sps_write_heimdall(fp, ptr, c.size)
    else:
        rc = lib.ddtk_sps_write_presto(fp, ptr, c.size, int(dm_index), int(factor))
    _lib.libc.fclose(fp)
    try:
        text = ctypes.string_at(buf, size.value).decode()
    finally:
        _lib.libc.free(buf)
    _lib.check(rc)
    return text


def write_candidates(path, cands, format="heimdall", dm_index=None, factor=1):
    """Write the candidates to path (format_candidates' text)."""
    text = format_candidates(cands, format, dm_index, factor)
    with open(path, "w") as f:
        f.write(text)


def read_candidates(path):
    """A Heimdall .cand file (as the tools write it) as SPS_CAND_DTYPE."""
    name = os.fsencode(path)
    fp = _lib.libc.fopen(name, b"r")
    if not fp:
        err = ctypes.get_errno()
        why = os.strerror(err) if err else "cannot open"
        raise _lib.SystemError_(f"{os.fsdecode(path)}: {why}")
    c, n = ctypes.POINTER(_lib.SpsCand)(), ctypes.c_int64()
    try:
        _lib.check(lib.ddtk_sps_read_heimdall(fp, name, ctypes.byref(c), ctypes.byref(n)))
    finally:
        _lib.libc.fclose(fp)
    return take_candidates(c, n.value)
