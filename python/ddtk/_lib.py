"""The one place that knows libddtk's C ABI: finding and loading the shared
library, the ctypes mirrors of every C struct the package passes (checked
field by field against the C headers by tests/test_abi.py), the functions'
prototypes, and turning a failed call into a Python exception carrying the
library's message (ddtk_errmsg).

The library is looked for, in order: $DDTK_LIBRARY (a path); next to the
package (a wheel built by `pip install ./python` carries it); the install
prefix the package sits in ($PREFIX/lib/pythonX.Y/dist-packages/ddtk ->
$PREFIX/lib, as `make install` lays it out); the build tree the package was
imported from (python/ddtk -> the repository root); the system's loader path.
"""

import ctypes
import os

SONAME = "libddtk.so.0"

# Exit codes of the library and tools (ddtk.h).
OK, EDATA, EUSAGE, ESYS = 0, 1, 2, 3

BACKENDS = {"auto": 0, "cpu": 1, "gpu": 2}
PARAM_INT, PARAM_REAL, PARAM_CHOICE = 0, 1, 2
MAX_PARAMS = 8
ROUNDING = {"nearest": 0, "floor": 1}
POL_DEFAULT, POL_SUM = -1, -2
FDAS_INTERP = {"exact": 0, "interbin": 1}

MAX_STRING = 4096
MAX_KEYS = 48


class Closing:
    """An owner of library memory: close() on leaving a with block and when collected."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Error(Exception):
    """A libddtk failure: the library's one-line message, and its code
    (``ddtk.EDATA`` bad data, ``ddtk.EUSAGE`` a bad value, ``ddtk.ESYS`` I/O,
    memory or GPU)."""

    def __init__(self, message, code=EDATA):
        super().__init__(message)
        self.code = code


class DataError(Error, ValueError):
    """Bad input data or file format (EDATA)."""


class UsageError(Error, ValueError):
    """A value the library refuses (EUSAGE): a DM list, a plan parameter."""


class SystemError_(Error, OSError):
    """I/O, memory or GPU failure (ESYS); also a missing file."""

    def __init__(self, message, code=ESYS):
        Error.__init__(self, message, code)

    def __str__(self):
        return self.args[0]


_ERRORS = {EDATA: DataError, EUSAGE: UsageError, ESYS: SystemError_}


def raise_error(code, message):
    raise _ERRORS.get(code, Error)(message, code)


# ---- struct mirrors (include/ddtk.h, dmplan.h, fdas.h, sps.h) --------------

i32, i64, dbl, u8 = ctypes.c_int32, ctypes.c_int64, ctypes.c_double, ctypes.c_uint8
cint, vp = ctypes.c_int, ctypes.c_void_p


class Header(ctypes.Structure):
    _fields_ = [(n, i32) for n in (
        "telescope_id", "machine_id", "data_type", "barycentric", "pulsarcentric",
        "nchans", "nbits", "nifs", "nbeams", "ibeam", "nbins", "nsamples")] + \
        [(n, dbl) for n in (
            "az_start", "za_start", "src_raj", "src_dej", "tstart", "tsamp", "period",
            "fch1", "foff", "refdm")] + [
        ("source_name", ctypes.c_char * (MAX_STRING + 1)),
        ("rawdatafile", ctypes.c_char * (MAX_STRING + 1)),
        ("signed_data", ctypes.c_int8),
        ("npuls", i64),
        ("freqs", ctypes.POINTER(dbl)),
        ("nfreqs", i32),
        ("order", u8 * MAX_KEYS),
        ("norder", cint),
        ("header_bytes", i64),
    ]


class Input(ctypes.Structure):
    _fields_ = [
        ("fp", vp),
        ("psrfits", vp),
        ("name", ctypes.c_char_p),
        ("hdr", Header),
        ("is_stdin", cint),
        ("nsamples", i64),
        ("bits_per_spectrum", i64),
        ("samples_read", i64),
        ("eof", cint),
        ("notes", ctypes.c_char_p),
        ("dead", ctypes.POINTER(u8)),
        ("clean", vp),
    ]


class DmList(ctypes.Structure):
    _fields_ = [("dm", ctypes.POINTER(dbl)), ("n", cint), ("cap", cint)]


class CpuConfig(ctypes.Structure):
    _fields_ = [("time_tile", cint), ("dm_block", cint), ("chan_block", cint)]


class GpuConfig(ctypes.Structure):
    _fields_ = [("lane_variant", cint), ("float_variant", cint)]


class PlanDesc(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("nchans", cint),
        ("tsamp", dbl),
        ("freqs", ctypes.POINTER(dbl)),
        ("chan_bw", dbl),
        ("kill", ctypes.POINTER(u8)),
        ("nbits", cint), ("nifs", cint), ("signed_data", cint),
        ("pol", cint),
        ("dms", ctypes.POINTER(dbl)),
        ("ndm", cint),
        ("downsamp", ctypes.POINTER(cint)),
        ("kdm", dbl),
        ("fref", dbl),
        ("rounding", cint),
        ("zerodm", cint),
        ("algorithm", ctypes.c_char_p),
        ("param", dbl * MAX_PARAMS),
        ("param_per_dm", ctypes.POINTER(cint) * MAX_PARAMS),
        ("param_set", ctypes.c_uint),
        ("backend", cint), ("gpu", cint),
        ("gpus", ctypes.POINTER(cint)),
        ("ngpus", cint),
        ("threads", cint),
        ("gulp", i64),
        ("max_mem", i64),
        ("gpu_mem", i64),
        ("gpu_serial", cint),
        ("cpu", CpuConfig),
        ("gpu_config", GpuConfig),
        ("quiet", cint), ("verbose", cint),
    ]


class ParamInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("help", ctypes.c_char_p),
        ("type", cint),
        ("def", dbl),
        ("lo", dbl), ("hi", dbl),
        ("lo_open", cint),
        ("choices", ctypes.POINTER(ctypes.c_char_p)),
        ("per_dm", cint),
    ]


class Obs(ctypes.Structure):
    _fields_ = [
        ("nchans", cint),
        ("tsamp", dbl), ("kdm", dbl),
        ("fhi", dbl), ("flo", dbl),
        ("chan_bw", dbl),
        ("bw", dbl), ("fctr", dbl),
        ("nsamples", i64),
    ]


class DmPlanRow(ctypes.Structure):
    _fields_ = [
        ("dm_lo", dbl), ("dm_hi", dbl), ("dm_step", dbl),
        ("downsamp", cint), ("ndm", cint),
        ("dms_per_sub", cint),
    ]


class DmPlan(ctypes.Structure):
    _fields_ = [("row", ctypes.POINTER(DmPlanRow)), ("n", cint), ("cap", cint)]


class FdasConfig(ctypes.Structure):
    _fields_ = [
        ("zmax", dbl),
        ("numharm", cint),
        ("sigma", dbl),
        ("interp", cint),
        ("flo", dbl), ("fhi", dbl),
        ("harm_remove", cint),
        ("backend", cint), ("gpu", cint), ("threads", cint),
        ("gpu_mem", i64),
        ("verbose", cint),
    ]


class FdasCand(ctypes.Structure):
    _fields_ = [
        ("sigma", dbl), ("power", dbl), ("cpow", dbl),
        ("numharm", cint),
        ("r", dbl), ("z", dbl),
        ("freq", dbl), ("fdot", dbl), ("accel", dbl),
    ]


class RunStats(ctypes.Structure):
    _fields_ = [
        ("nin", i64), ("nout", i64),
        ("nlen", i64),
        ("ndm", cint), ("nlive", cint), ("nkilled", cint),
        ("wall", dbl), ("kernel", dbl), ("tobs", dbl),
        ("commit", dbl),
        ("adds", dbl),
        ("backend", ctypes.c_char_p),
    ]


class Source(ctypes.Structure):
    pass


SOURCE_READ = ctypes.CFUNCTYPE(cint, ctypes.POINTER(Source), vp, i64, ctypes.POINTER(i64))
Source._fields_ = [
    ("name", ctypes.c_char_p),
    ("nsamples", i64),
    ("read", SOURCE_READ),
    ("ctx", vp),
    ("bits", i64),
    ("samples_read", i64),
    ("eof", cint),
]


class Sink(ctypes.Structure):
    pass


SERIES_FN = ctypes.CFUNCTYPE(cint, vp, cint, i64, ctypes.POINTER(ctypes.c_float), i64)
Sink._fields_ = [
    ("write", ctypes.CFUNCTYPE(cint, ctypes.POINTER(Sink), cint, i64,
                               ctypes.POINTER(ctypes.c_float), i64)),
    ("pad", ctypes.CFUNCTYPE(cint, ctypes.POINTER(Sink), cint, i64, ctypes.c_float, i64)),
    ("finish", ctypes.CFUNCTYPE(cint, ctypes.POINTER(Sink), cint)),
    ("length", cint),
    ("serial", cint),
    ("discard", cint),
    ("ctx", vp),
    ("stride", ctypes.c_size_t),
    ("fn", SERIES_FN),
]


class StreamOptions(ctypes.Structure):
    _fields_ = [("pad", cint), ("quiet", cint)]


MESSAGE_FN = ctypes.CFUNCTYPE(None, vp, cint, ctypes.c_char_p)
PROGRESS_FN = ctypes.CFUNCTYPE(None, vp, cint, ctypes.c_char_p, i64, i64)


class CleanOpts(ctypes.Structure):
    _fields_ = [
        ("auto_rfi", cint),
        ("mask", ctypes.c_char_p),
        ("clip_sigma", dbl),
        ("block", i64),
    ]


class RfiReport(ctypes.Structure):
    _fields_ = [(n, i64) for n in ("blocks", "chan_blocks", "chans_ever", "spectra_clipped",
                                   "samples", "samples_masked")]


# ---- the single-pulse search (include/sps.h) ---------------------------------

class SpsParams(ctypes.Structure):
    _fields_ = [
        ("snr", dbl),
        ("max_width", cint),
        ("dm_tol", cint), ("width_tol", cint),
        ("time_tol", dbl),
        ("baseline", dbl),
        ("gpu_giants", cint),
    ]


class SpsCand(ctypes.Structure):
    _fields_ = [
        ("snr", dbl),
        ("sample", i64),
        ("time", dbl),
        ("width", i64),
        ("dm_index", cint),
        ("dm", dbl),
        ("members", cint),
        ("begin", i64), ("end", i64),
    ]


class SpsSink(ctypes.Structure):
    _fields_ = [
        ("sink", Sink),
        ("next", ctypes.POINTER(Sink)),
        ("search", vp),
        ("rank", ctypes.POINTER(cint)),
        ("on_device", cint),
    ]

# C name -> mirror, for the ABI test (and its C snippet's header).
STRUCTS = {
    "ddtk_header": Header,
    "ddtk_input": Input,
    "ddtk_dmlist": DmList,
    "ddtk_cpu_config": CpuConfig,
    "ddtk_gpu_config": GpuConfig,
    "ddtk_plan_desc": PlanDesc,
    "ddtk_param_info": ParamInfo,
    "ddtk_obs": Obs,
    "ddtk_dmplan_row": DmPlanRow,
    "ddtk_dmplan": DmPlan,
    "ddtk_fdas_config": FdasConfig,
    "ddtk_fdas_cand": FdasCand,
    "ddtk_run_stats": RunStats,
    "ddtk_source": Source,
    "ddtk_sink": Sink,
    "ddtk_stream_options": StreamOptions,
    "ddtk_clean_opts": CleanOpts,
    "ddtk_rfi_report": RfiReport,
    "ddtk_sps_params": SpsParams,
    "ddtk_sps_cand": SpsCand,
    "ddtk_sps_sink": SpsSink,
}
HEADERS = ("ddtk.h", "dmplan.h", "fdas.h", "sps.h")


# ---- loading ----------------------------------------------------------------

def _candidates():
    env = os.environ.get("DDTK_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, SONAME)
    yield os.path.normpath(os.path.join(here, "..", "..", "..", SONAME))
    yield os.path.normpath(os.path.join(here, "..", "..", SONAME))
    yield SONAME


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError("ddtk: libddtk.so not found; build it (make) or set DDTK_LIBRARY. "
                      "Tried: " + "; ".join(tried))


lib, path = _load()

P = ctypes.POINTER
_protos = {
    "ddtk_errmsg": (ctypes.c_char_p, []),
    "ddtk_input_open": (cint, [P(Input), ctypes.c_char_p]),
    "ddtk_input_read": (cint, [P(Input), vp, i64, P(i64)]),
    "ddtk_input_close": (None, [P(Input)]),
    "ddtk_input_bytes": (i64, [P(Input), i64]),
    "ddtk_header_has": (cint, [P(Header), ctypes.c_char_p]),
    "ddtk_chan_freq": (dbl, [P(Header), cint]),
    "ddtk_telescope_name": (ctypes.c_char_p, [cint]),
    "ddtk_machine_name": (ctypes.c_char_p, [cint]),
    "ddtk_dmlist_free": (None, [P(DmList)]),
    "ddtk_killfile_read": (cint, [ctypes.c_char_p, cint, P(P(u8)), P(cint)]),
    "ddtk_dmlist_tol": (cint, [P(DmList), dbl, dbl, dbl, dbl, dbl, dbl, dbl, cint]),
    "ddtk_dmlist_range": (cint, [P(DmList), dbl, dbl, dbl]),
    "ddtk_plan_desc_init": (None, [P(PlanDesc)]),
    "ddtk_plan_desc_header": (cint, [P(PlanDesc), P(Header), P(P(dbl))]),
    "ddtk_algorithm": (ctypes.c_char_p, [cint]),
    "ddtk_algorithm_param": (cint, [ctypes.c_char_p, cint, P(ParamInfo)]),
    "ddtk_plan_desc_set_algorithm": (cint, [P(PlanDesc), ctypes.c_char_p]),
    "ddtk_plan_desc_set_param": (cint, [P(PlanDesc), ctypes.c_char_p, dbl]),
    "ddtk_plan_desc_set_param_per_dm": (cint, [P(PlanDesc), ctypes.c_char_p, P(cint)]),
    "ddtk_plan_create": (cint, [P(vp), P(PlanDesc)]),
    "ddtk_plan_destroy": (None, [vp]),
    "ddtk_plan_ndm": (cint, [vp]),
    "ddtk_plan_dms": (P(dbl), [vp]),
    "ddtk_plan_downsamp": (cint, [vp, cint]),
    "ddtk_plan_max_delay": (i32, [vp]),
    "ddtk_plan_nlive": (cint, [vp]),
    "ddtk_plan_fref": (dbl, [vp]),
    "ddtk_plan_backend": (ctypes.c_char_p, [vp]),
    "ddtk_plan_algorithm": (ctypes.c_char_p, [vp]),
    "ddtk_plan_nout": (i64, [vp, cint, i64]),
    "ddtk_plan_execute": (cint, [vp, i64, vp, cint, vp, ctypes.c_size_t, cint]),
    "ddtk_source_file": (None, [P(Source), P(Input)]),
    "ddtk_sink_memory": (None, [P(Sink), vp, ctypes.c_size_t]),
    "ddtk_sink_callback": (None, [P(Sink), SERIES_FN, vp]),
    "ddtk_plan_stream": (cint, [vp, P(Source), P(Sink), P(StreamOptions), P(RunStats)]),
    "ddtk_wisdom_path": (vp, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]),
    "ddtk_set_message_handler": (None, [MESSAGE_FN, vp]),
    "ddtk_wisdom_apply": (cint, [P(PlanDesc), ctypes.c_char_p, P(cint)]),
    "ddtk_gpu_count": (cint, []),
    "ddtk_gpu_usable": (cint, [cint, ctypes.c_char_p, ctypes.c_size_t,
                               ctypes.c_char_p, ctypes.c_size_t]),
    "ddtk_obs_init": (cint, [P(Obs), cint, dbl, dbl, dbl, i64, dbl]),
    "ddtk_scrunch_factor": (cint, [P(Obs), dbl]),
    "ddtk_diagonal_dm": (dbl, [P(Obs)]),
    "ddtk_dmplan_ranges": (cint, [P(DmPlan), P(Obs), dbl, dbl, cint]),
    "ddtk_dmplan_expand": (cint, [P(DmPlan), P(DmList), P(P(cint))]),
    "ddtk_dmplan_free": (None, [P(DmPlan)]),
    "ddtk_fdas_config_init": (None, [P(FdasConfig)]),
    "ddtk_fdas_search_length": (i64, [i64]),
    "ddtk_fdas_plan_create": (cint, [P(vp), i64, dbl, P(FdasConfig)]),
    "ddtk_fdas_execute": (cint, [vp, vp]),
    "ddtk_fdas_candidates": (P(FdasCand), [vp, P(cint)]),
    "ddtk_fdas_filter_accel": (None, [vp, dbl, dbl]),
    "ddtk_fdas_backend_name": (ctypes.c_char_p, [vp]),
    "ddtk_fdas_plan_destroy": (None, [vp]),
    "ddtk_set_progress_handler": (None, [PROGRESS_FN, vp]),
    "ddtk_input_open_files": (cint, [P(Input), P(ctypes.c_char_p), cint]),
    "ddtk_input_require_filterbank": (cint, [P(Input)]),
    "ddtk_input_clean": (cint, [P(Input), P(CleanOpts)]),
    "ddtk_input_clean_report": (None, [P(Input), P(RfiReport)]),
    "ddtk_plan_tsamp": (dbl, [vp]),
    "ddtk_sps_params_init": (None, [P(SpsParams)]),
    "ddtk_sps_widest": (i64, [P(SpsParams), dbl, cint]),
    "ddtk_sps_create": (cint, [P(vp), P(SpsParams), cint, P(dbl), P(cint), dbl]),
    "ddtk_sps_feed": (cint, [vp, cint, P(ctypes.c_float), i64]),
    "ddtk_sps_end": (cint, [vp, cint]),
    "ddtk_sps_finish": (cint, [vp, P(P(SpsCand)), P(i64)]),
    "ddtk_sps_giants": (i64, [vp]),
    "ddtk_sps_destroy": (None, [vp]),
    "ddtk_sps_sink_init": (cint, [P(SpsSink), P(SpsParams), vp, P(Sink)]),
    "ddtk_sps_sink_finish": (cint, [P(SpsSink), P(P(SpsCand)), P(i64)]),
    "ddtk_sps_sink_free": (None, [P(SpsSink)]),
    "ddtk_sps_write_heimdall": (cint, [vp, P(SpsCand), i64]),
    "ddtk_sps_write_presto": (cint, [vp, P(SpsCand), i64, cint, cint]),
    "ddtk_sps_read_heimdall": (cint, [vp, ctypes.c_char_p, P(P(SpsCand)), P(i64)]),
}
for _name, (_res, _args) in _protos.items():
    _f = getattr(lib, _name)
    _f.restype, _f.argtypes = _res, _args

libc = ctypes.CDLL(None, use_errno=True)
libc.free.argtypes, libc.free.restype = [vp], None
libc.fopen.argtypes, libc.fopen.restype = [ctypes.c_char_p, ctypes.c_char_p], vp
libc.fclose.argtypes, libc.fclose.restype = [vp], cint
libc.open_memstream.argtypes, libc.open_memstream.restype = [P(vp), P(ctypes.c_size_t)], vp


# The library's messages (it prints nothing itself): warnings as Python
# warnings (ddtk.LibraryWarning), the rest to the "ddtk" logger.
MSG_WARNING, MSG_NOTE, MSG_INFO, MSG_VERBOSE = 0, 1, 2, 3


class LibraryWarning(UserWarning):
    """A warning of libddtk (a header that disagrees with its file, a
    damaged wisdom file, ...): the text the tools print as "warning: ..."."""


def _message(ctx, level, text):
    import logging
    import warnings
    text = text.decode("utf-8", "replace")
    if level == MSG_WARNING:
        warnings.warn(text, LibraryWarning, stacklevel=2)
    else:
        logging.getLogger("ddtk").log(logging.DEBUG if level == MSG_VERBOSE else logging.INFO,
                                      text)


_message_fn = MESSAGE_FN(_message)
lib.ddtk_set_message_handler(_message_fn, None)

# ddtk_fail(code, fmt, ...): a Python source's or sink's failure, for the library.
lib.ddtk_fail.restype = cint


def fail(code, message):
    """Record message as the library's last failure (what a C source or sink
    does with ddtk_fail) and return code."""
    return lib.ddtk_fail(cint(code), b"%s", message.encode("utf-8", "replace"))


def errmsg():
    return lib.ddtk_errmsg().decode("utf-8", "replace")


def check(rc):
    """Raise the library's failure (code rc, message ddtk_errmsg) unless rc is 0."""
    if rc:
        raise_error(rc, errmsg())
