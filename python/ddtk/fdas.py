"""The Fourier-domain acceleration search (include/fdas.h) on a NumPy time
series, with candidates as a NumPy structured array."""

import ctypes

import numpy as np

from . import _lib
from ._lib import lib

# ddtk_fdas_cand's layout, field for field (offsets from the ctypes mirror).
CAND_DTYPE = np.dtype({
    "names": [n for n, _ in _lib.FdasCand._fields_],
    "formats": ["i4" if t is ctypes.c_int else "f8" for _, t in _lib.FdasCand._fields_],
    "offsets": [getattr(_lib.FdasCand, n).offset for n, _ in _lib.FdasCand._fields_],
    "itemsize": ctypes.sizeof(_lib.FdasCand),
})


def fdas(series, tsamp, *, zmax=None, numharm=None, sigma=None, interp=None, flo=None,
         fhi=None, harm_remove=None, accel_range=None, backend="auto", gpu=0, threads=0,
         gpu_mem=0):
    """Search a time series (a 1-D float32 array sampled every ``tsamp`` s)
    as the ``fdas`` tool does: a length the real FFT cannot take is padded
    with the series' mean; ``zmax``, ``numharm``, ``sigma``, ``interp``
    ("exact" or "interbin"), ``flo``/``fhi`` (Hz) and ``harm_remove``
    default to the tool's; ``accel_range=(amin, amax)`` (m/s^2) keeps only
    those candidates (give zmax to cover it). Returns the candidates, best
    first, as a structured array of CAND_DTYPE (sigma, power, cpow,
    numharm, r, z, freq, fdot, accel). ``gpu_mem``: bytes the GPU's plane
    and work buffers may take (0: no bound; the tool's DDTK_FDAS_GPU_MEM)."""
    x = series
    if not isinstance(x, np.ndarray):
        raise TypeError(f"series: expected a NumPy array, got {type(x).__name__}")
    if x.dtype != np.float32:
        raise TypeError(f"series: dtype {x.dtype}, fdas takes float32")
    if x.ndim != 1:
        raise ValueError(f"series: shape {x.shape}, expected one dimension")
    n = lib.ddtk_fdas_search_length(x.size)
    if n != x.size:
        # the tool's ddtk_fdas_series_pad: the mean summed in order, in double
        mean = np.float32(np.cumsum(x, dtype=np.float64)[-1] / x.size) if x.size else 0
        x = np.concatenate([x, np.full(n - x.size, mean, np.float32)])
    x = np.ascontiguousarray(x)
    cfg = _lib.FdasConfig()
    lib.ddtk_fdas_config_init(ctypes.byref(cfg))
    for k, v in (("zmax", zmax), ("numharm", numharm), ("sigma", sigma), ("flo", flo),
                 ("fhi", fhi)):
        if v is not None:
            setattr(cfg, k, type(getattr(cfg, k))(v))
    if interp is not None:
        cfg.interp = _lib.FDAS_INTERP[interp] if interp in _lib.FDAS_INTERP else \
            _lib.raise_error(_lib.EUSAGE, f"interp {interp!r}: expected exact or interbin")
    if harm_remove is not None:
        cfg.harm_remove = int(bool(harm_remove))
    if backend not in _lib.BACKENDS:
        _lib.raise_error(_lib.EUSAGE, f"backend {backend!r}: expected auto, cpu or gpu")
    cfg.backend, cfg.gpu, cfg.threads = _lib.BACKENDS[backend], int(gpu), int(threads)
    cfg.gpu_mem = int(gpu_mem)
    plan = ctypes.c_void_p()
    _lib.check(lib.ddtk_fdas_plan_create(ctypes.byref(plan), int(n), float(tsamp),
                                         ctypes.byref(cfg)))
    try:
        _lib.check(lib.ddtk_fdas_execute(plan, x.ctypes.data))
        if accel_range is not None:
            lib.ddtk_fdas_filter_accel(plan, float(accel_range[0]), float(accel_range[1]))
        count = ctypes.c_int(0)
        c = lib.ddtk_fdas_candidates(plan, ctypes.byref(count))
        nbytes = count.value * CAND_DTYPE.itemsize
        return np.frombuffer(ctypes.string_at(c, nbytes) if nbytes else b"", CAND_DTYPE).copy()
    finally:
        lib.ddtk_fdas_plan_destroy(plan)
