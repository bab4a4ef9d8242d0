"""ddtk: the dedispersion toolkit from Python, over libddtk.so (ctypes and
NumPy; nothing compiled at install time).

    import ddtk
    hdr = ddtk.read_header("obs.fil")
    plan = ddtk.Plan(hdr, dm_range=(0, 500))          # the tools' tolerance list
    with ddtk.Reader("obs.fil") as r:
        series = plan.execute(r.read(0, 65536))       # float32 (ndm, nout)
    series = ddtk.dedisperse("obs.fil", [0, 10, 56.7])  # dd_direct's series
    cands = ddtk.single_pulse_search(series, [0, 10, 56.7], hdr["tsamp"], snr=7)
    run = plan.stream("obs.fil", search=dict(snr=7), rfi="auto")  # dd_direct --search
    run["candidates"]                                 # in bounded memory

Failures raise ddtk.Error (DataError, UsageError: ValueError; SystemError_:
OSError) with the library's one-line message; the library's warnings are
Python warnings (ddtk.LibraryWarning), its notes go to the "ddtk" logger.
"""

from ._lib import (EDATA, ESYS, EUSAGE, DataError, Error, LibraryWarning, SystemError_,
                   UsageError, path as library_path)
from ._lib import lib as _clib
from .dmplan import diagonal_dm, dm_list, dm_ranges, scrunch_factors
from .fdas import CAND_DTYPE, fdas
from .io import Reader, read_block, read_header
from .plan import Plan, algorithms, dedisperse
from .sps import (SPS_CAND_DTYPE, SinglePulseSearch, format_candidates, read_candidates,
                  search_params, single_pulse_search, write_candidates)

__version__ = "0.1.0"

__all__ = ["Plan", "algorithms", "Reader", "read_header", "read_block", "dedisperse",
           "dm_list", "dm_ranges", "scrunch_factors", "diagonal_dm", "fdas", "CAND_DTYPE",
           "single_pulse_search", "SinglePulseSearch", "SPS_CAND_DTYPE", "search_params",
           "format_candidates", "write_candidates", "read_candidates",
           "gpu_count", "gpu_usable", "Error", "DataError", "UsageError", "SystemError_",
           "LibraryWarning", "EDATA", "EUSAGE", "ESYS", "library_path"]


def gpu_count():
    """GPUs visible to the library (0 in a build without CUDA)."""
    return _clib.ddtk_gpu_count()


def gpu_usable(index=0):
    """(True, name) when GPU index can be used, else (False, the reason)."""
    import ctypes
    name, why = ctypes.create_string_buffer(256), ctypes.create_string_buffer(256)
    ok = _clib.ddtk_gpu_usable(index, name, 256, why, 256)
    return bool(ok), (name.value if ok else why.value).decode()
