"""Dedispersion plans on NumPy arrays (ddtk_plan_create / ddtk_plan_execute),
streaming of long inputs in bounded memory (ddtk_plan_stream: a file, its
RFI excision, standard input or Python blocks in; a Python callback, the
single-pulse search's sink or a NumPy array out; progress to a Python
callable), and the one-call ``dedisperse(path, dms)``.

``Plan.execute`` hands the library the block's and the output's own buffers:
a time-major block (spectrum after spectrum, as files hold them, or the
channels x samples view ``Reader.read_block`` returns, which is its
transpose) is read where it lies, and each DM's series is written straight
into its row of the result (or of ``out=``).
"""

import ctypes
import os

import numpy as np

from . import _lib, dmplan, sps
from ._lib import lib
from .io import Reader, clean_opts as _clean_opts, is_file_source as _is_file_source, \
    open_input as _open_input, pack_bits, paths_of as _paths_of, sample_dtype

def algorithms():
    """The library's algorithms and their parameters, as the tools offer
    them (--NAME, underscores as dashes): {algorithm: [parameter dict]},
    each with name, help, type ("int", "real" or "choice"), default,
    lo, hi, choices and per_dm (may be given one value per DM)."""
    out, i = {}, 0
    while (name := lib.ddtk_algorithm(i)) is not None:
        out[name.decode()] = _params_of(name)
        i += 1
    return out


def _params_of(algorithm):
    params, info, i = [], _lib.ParamInfo(), 0
    while lib.ddtk_algorithm_param(algorithm, i, ctypes.byref(info)) == 0:
        choices = None
        if info.type == _lib.PARAM_CHOICE:
            choices, k = [], 0
            while info.choices[k] is not None:
                choices.append(info.choices[k].decode())
                k += 1
        params.append({"name": info.name.decode(), "help": info.help.decode(),
                       "type": ("int", "real", "choice")[info.type],
                       "default": getattr(info, "def"), "lo": info.lo, "hi": info.hi,
                       "choices": choices, "per_dm": bool(info.per_dm)})
        i += 1
    return params


def _choice(what, value, table):
    if value not in table:
        raise _lib.UsageError(f"{what} {value!r}: expected one of {', '.join(table)}",
                              _lib.EUSAGE)
    return table[value]


def _f64(what, values):
    a = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(a)):
        raise _lib.UsageError(f"{what}: every value must be finite", _lib.EUSAGE)
    return a


def _ptr(a, ctype):
    return a.ctypes.data_as(ctypes.POINTER(ctype)) if a is not None else None


def _header_of(header):
    if isinstance(header, dict):
        return header
    if isinstance(header, Reader):
        return header.header
    if _is_file_source(header):
        with Reader(header if isinstance(header, (str, bytes, os.PathLike))
                    else list(header)) as r:
            return r.header
    raise TypeError(f"header: expected a dict from read_header, a Reader or a path, "
                    f"got {type(header).__name__}")


class Plan(_lib.Closing):
    """A dedispersion plan: channels, sample time and format, DM trials and
    the algorithm, turned into delay tables once (``ddtk_plan_create``).

    Geometry from ``header`` (a dict from ``read_header``, a ``Reader`` or a
    path) or from arrays: ``freqs`` (each channel's centre in MHz, file
    order), ``tsamp`` (s), ``nbits`` (1, 2, 4, 8, 16 or 32), ``nifs``,
    ``signed``; the keyword arguments override the header's.

    DM trials: ``dms`` (a list), or ``dm_range=(lo, hi)`` with ``dm_step``
    (a linear list) or else the tolerance list of ``tol`` and
    ``pulse_width`` (µs), as ``dd_direct --dm-min --dm-max`` makes it;
    ``scrunch=True`` time-scrunches each DM past the diagonal DM (as
    ``--scrunch auto``) or ``downsamp`` gives each DM's factor.

    ``algorithm`` is a name of ``ddtk.algorithms()`` ("direct", "subband",
    "tree"), with ``params`` a dict of its parameters by name, checked by the
    library (subband: nsub, dm_group, sub_dm, max_smear_ratio; tree: method
    "piecewise" or "padded", sub_chans, max_smear; an array gives a per-DM
    parameter one value per DM). ``backend`` "auto", "cpu" or "gpu" and ``gpu`` (index).
    Also: ``kill`` (per channel, true = killed; or a killfile's path),
    ``fref`` (MHz), ``kdm``, ``rounding`` ("nearest" or "floor"), ``zerodm``,
    ``pol`` (IF index or "sum"), ``threads``, ``chan_bw``; for streaming,
    ``gulp`` (spectra per gulp, 0: automatic), ``max_mem`` (bytes of host
    gulp buffers, 0: 2 GiB), ``gpu_mem`` (bytes of each GPU's, 0: 80% of its
    free memory) and ``gpu_serial`` (GPU gulps one after another, for kernel
    timings); the tools' DDTK_GPU_MEM and DDTK_GPU_SERIAL are theirs, not
    read here. ``wisdom``: True reads the tools' wisdom file
    ($DDTK_WISDOM, else the cache), a path that file, False none.
    ``verbose``: the plan's detail to the "ddtk" logger (DEBUG). A file's
    RFI excision (--rfi, --mask), progress and the single-pulse search are
    each run's: ``stream``'s and ``dedisperse``'s arguments.

    Failures raise ``ddtk.Error`` subclasses with the library's message.
    """

    def __init__(self, header=None, *, freqs=None, tsamp=None, nbits=None, nifs=None,
                 signed=None, chan_bw=None, dms=None, dm_range=None, dm_step=None, tol=1.25,
                 pulse_width=40.0, scrunch=False, downsamp=None, algorithm="direct",
                 params=None, backend="auto", gpu=0, kill=None, fref=None, kdm=None,
                 rounding="nearest", zerodm=False, pol=None, threads=0, gulp=0, max_mem=0,
                 gpu_mem=0, gpu_serial=False, wisdom=True, verbose=False, name=None):
        self._plan = None
        h = _header_of(header) if header is not None else {}
        chan_bw = self._geometry(h, freqs, tsamp, nbits, nifs, signed, chan_bw)
        d = _lib.PlanDesc()
        lib.ddtk_plan_desc_init(ctypes.byref(d))
        if kdm is not None:
            d.kdm = float(kdm)
        # the arrays d points to live until the plan has copied them
        dm_a, ds_a = self._dm_trials(dms, dm_range, dm_step, tol, pulse_width, scrunch,
                                     downsamp, d.kdm)
        kill_a = self._kill(kill)
        if "dead" in h:                         # the input's dead channels join the kill
            kill_a = (h["dead"] if kill_a is None else kill_a | h["dead"]).astype(np.uint8)
        d.name = os.fsencode(name if name is not None else h.get("path", "plan"))
        d.nchans, d.tsamp, d.freqs = self.nchans, self.tsamp, _ptr(self.freqs, ctypes.c_double)
        d.chan_bw = float(chan_bw or 0)
        d.nbits, d.nifs, d.signed_data = self.nbits, self.nifs, int(self.signed)
        if pol is not None:
            d.pol = _lib.POL_SUM if pol == "sum" else int(pol)
        d.kill = _ptr(kill_a, ctypes.c_uint8)
        d.dms, d.ndm = _ptr(dm_a, ctypes.c_double), dm_a.size
        d.downsamp = _ptr(ds_a, ctypes.c_int)
        if fref is not None:
            d.fref = float(fref)
        d.rounding = _choice("rounding", rounding, _lib.ROUNDING)
        d.zerodm = int(bool(zerodm))
        keep = self._algorithm(d, algorithm, params or {}, dm_a.size)
        d.backend = _choice("backend", backend, _lib.BACKENDS)
        d.gpu, d.threads = int(gpu), int(threads)
        d.gulp, d.max_mem = int(gulp), int(max_mem)
        d.gpu_mem, d.gpu_serial = int(gpu_mem), int(bool(gpu_serial))
        # progress is each run's (stream's progress=: its options' quiet otherwise)
        d.quiet, d.verbose = 0, int(bool(verbose))
        self.wisdom_found = self._apply_wisdom(d, wisdom)
        plan = ctypes.c_void_p()
        _lib.check(lib.ddtk_plan_create(ctypes.byref(plan), ctypes.byref(d)))
        del keep                                # per-DM parameters: copied by the plan
        self._plan, self._destroy = plan, lib.ddtk_plan_destroy   # kept for shutdown
        self._describe(plan)

    def _geometry(self, h, freqs, tsamp, nbits, nifs, signed, chan_bw):
        """Channels, sample time and format: the arguments, else the header's."""
        if freqs is None and "freqs" not in h:
            raise _lib.UsageError("a plan needs a header or freqs", _lib.EUSAGE)
        if tsamp is None and "tsamp" not in h:
            raise _lib.UsageError("a plan needs a header or tsamp", _lib.EUSAGE)
        f = _f64("freqs", h["freqs"] if freqs is None else freqs)
        if f.size < 1:
            raise _lib.UsageError("freqs: at least one channel", _lib.EUSAGE)
        self.freqs, self.nchans = f, f.size
        self.tsamp = float(h["tsamp"] if tsamp is None else tsamp)
        self.nbits = int(nbits if nbits is not None else h.get("nbits", 32))
        self.nifs = int(nifs if nifs is not None else h.get("nifs", 1))
        self.signed = bool(signed if signed is not None else h.get("signed", 0) == 1)
        self.dtype = sample_dtype(self.nbits, self.signed)
        return abs(h["foff"]) if chan_bw is None and h.get("foff") else chan_bw

    def _kill(self, kill):
        """The kill mask as uint8 per channel: from an array, or a killfile."""
        if kill is None:
            return None
        if isinstance(kill, (str, bytes, os.PathLike)):
            mask, nkilled = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_int()
            _lib.check(lib.ddtk_killfile_read(os.fsencode(kill), self.nchans,
                                              ctypes.byref(mask), ctypes.byref(nkilled)))
            try:
                return np.ctypeslib.as_array(mask, (self.nchans,)).copy()
            finally:
                _lib.libc.free(ctypes.cast(mask, ctypes.c_void_p))
        k = np.ascontiguousarray(kill, dtype=bool).astype(np.uint8).reshape(-1)
        if k.size != self.nchans:
            raise _lib.UsageError(f"kill: {k.size} values for {self.nchans} channels",
                                  _lib.EUSAGE)
        return k

    @staticmethod
    def _algorithm(d, algorithm, params, ndm):
        """The algorithm and its parameters, set and checked by the library
        by name (a choice by its name, a per-DM parameter by an array); the
        per-DM arrays returned live until the plan is made."""
        if not isinstance(algorithm, str):
            raise TypeError(f"algorithm: expected a name, got {type(algorithm).__name__}")
        _lib.check(lib.ddtk_plan_desc_set_algorithm(ctypes.byref(d), algorithm.encode()))
        info = {p["name"]: p for p in _params_of(algorithm.encode())}
        keep = []
        for k, v in params.items():
            name = k.encode()
            if isinstance(v, str) and k in info and info[k]["choices"]:
                if v not in info[k]["choices"]:
                    raise _lib.UsageError(f"{algorithm} {k} {v!r}: expected "
                                          f"{' or '.join(info[k]['choices'])}", _lib.EUSAGE)
                v = info[k]["choices"].index(v)
            if np.ndim(v) == 1:
                a = np.ascontiguousarray(v, dtype=np.intc)
                if a.size != ndm:
                    raise _lib.UsageError(f"{algorithm} {k}: {a.size} values for {ndm} DMs",
                                          _lib.EUSAGE)
                keep.append(a)
                rc = lib.ddtk_plan_desc_set_param_per_dm(ctypes.byref(d), name,
                                                         _ptr(a, ctypes.c_int))
            else:
                rc = lib.ddtk_plan_desc_set_param(ctypes.byref(d), name, float(v))
            _lib.check(rc)
        return keep

    def _describe(self, plan):
        """What the library made of the description."""
        n = lib.ddtk_plan_ndm(plan)
        self.dms = np.ctypeslib.as_array(lib.ddtk_plan_dms(plan), (n,)).copy()
        self.downsamp = np.array([lib.ddtk_plan_downsamp(plan, i) for i in range(n)], np.int32)
        self.max_delay = int(lib.ddtk_plan_max_delay(plan))
        self.nlive = int(lib.ddtk_plan_nlive(plan))
        self.fref = float(lib.ddtk_plan_fref(plan))
        self.backend = lib.ddtk_plan_backend(plan).decode()
        self.algorithm = lib.ddtk_plan_algorithm(plan).decode()
        self.scrunched = bool(np.any(self.downsamp != 1))

    def _dm_trials(self, dms, dm_range, dm_step, tol, pulse_width, scrunch, downsamp, kdm):
        if (dms is None) == (dm_range is None):
            raise _lib.UsageError("give exactly one of dms and dm_range", _lib.EUSAGE)
        if dms is not None:
            dm_a = _f64("dms", np.atleast_1d(dms))
        else:
            lo, hi = dm_range
            dm_a = dmplan.dm_list(lo, hi, step=dm_step, tol=tol, pulse_width=pulse_width,
                                  freqs=self.freqs, tsamp=self.tsamp)
        if dm_a.size < 1:
            raise _lib.UsageError("dms: at least one DM", _lib.EUSAGE)
        ds_a = None
        if downsamp is not None:
            ds_a = np.ascontiguousarray(downsamp, dtype=np.intc).reshape(-1)
            if ds_a.size != dm_a.size:
                raise _lib.UsageError(f"downsamp: {ds_a.size} factors for {dm_a.size} DMs",
                                      _lib.EUSAGE)
        elif scrunch:
            ds_a = dmplan.scrunch_factors(dm_a, freqs=self.freqs, tsamp=self.tsamp, kdm=kdm)
        return dm_a, ds_a

    @staticmethod
    def _apply_wisdom(d, wisdom):
        if wisdom is False or wisdom is None:
            return False
        if wisdom is True:                      # where the tools look
            env = [os.environ.get(k) for k in ("DDTK_WISDOM", "XDG_CACHE_HOME", "HOME")]
            p = lib.ddtk_wisdom_path(*[os.fsencode(v) if v else None for v in env])
            if not p:
                return False
            path = ctypes.string_at(p)
            _lib.libc.free(p)
        else:
            path = os.fsencode(wisdom)
        found = ctypes.c_int(0)
        _lib.check(lib.ddtk_wisdom_apply(ctypes.byref(d), path, ctypes.byref(found)))
        return bool(found.value)

    # ---- lifetime ----

    def close(self):
        """Free the plan (also done when it is collected)."""
        if self._plan:
            self._destroy(self._plan)
            self._plan = None

    def __repr__(self):
        return (f"<ddtk.Plan {self.algorithm} on {self.backend}: {self.nchans} channels "
                f"({self.nlive} live), {self.nbits}-bit, {self.dms.size} DMs "
                f"{self.dms[0]:g}..{self.dms[-1]:g}, max delay {self.max_delay}>")

    @property
    def ndm(self):
        return self.dms.size

    def _handle(self):
        if not self._plan:
            raise ValueError("the plan is closed")
        return self._plan

    def nout(self, nsamps):
        """Output samples of each DM for a block of nsamps spectra (an int
        array; all equal unless the plan scrunches)."""
        p = self._handle()
        if not self.scrunched:                  # one length for all: one call, not ndm
            return np.full(self.ndm, lib.ddtk_plan_nout(p, 0, int(nsamps)), np.int64)
        return np.array([lib.ddtk_plan_nout(p, i, int(nsamps)) for i in range(self.ndm)],
                        np.int64)

    # ---- execution ----

    def _time_major(self, block):
        """The block as (samples,) + spectrum in time-major memory: itself,
        or the array it is the transpose of (no copy), else a copy."""
        per = self.nchans * self.nifs
        if not isinstance(block, np.ndarray):
            raise TypeError(f"block: expected a NumPy array, got {type(block).__name__}")
        if block.dtype != self.dtype:
            raise TypeError(f"block: dtype {block.dtype}, this plan takes {self.dtype} "
                            f"({self.nbits}-bit{' signed' if self.signed else ''} samples)")
        spectrum = (self.nchans,) if self.nifs == 1 else (self.nifs, self.nchans)
        if block.ndim == 1 and per > 1 and self.nbits < 8:
            raise ValueError(f"block: a 1-D array of packed {self.nbits}-bit samples needs "
                             f"nsamps= (the spectra it holds)")
        if block.ndim == 1 and per == 1:
            tm = block.reshape(-1, 1)
        elif block.ndim == 1 + len(spectrum) and block.shape[1:] == spectrum:
            tm = block                         # (samples, [nifs,] nchans)
        elif block.ndim == 1 + len(spectrum) and block.shape[:-1] == spectrum[::-1]:
            tm = block.T                       # (nchans, [nifs,] samples): its transpose
        else:
            raise ValueError(f"block: shape {block.shape}: expected (samples, {self.nchans}) "
                             f"or ({self.nchans}, samples)"
                             + (f" with {self.nifs} IFs" if self.nifs > 1 else ""))
        return np.ascontiguousarray(tm)        # a copy only if not time-major in memory

    def _block(self, block, nsamps):
        """The block's packed time-major buffer and its spectra."""
        per = self.nchans * self.nifs
        if nsamps is not None:
            if not isinstance(block, np.ndarray) or block.dtype != np.uint8 or block.ndim != 1:
                raise TypeError("block: with nsamps, the packed bytes as a 1-D uint8 array")
            need = -(-int(nsamps) * per * self.nbits // 8)
            if block.size < need:
                raise ValueError(f"block: {block.size} bytes; {nsamps} spectra of {per} "
                                 f"{self.nbits}-bit samples need {need}")
            return np.ascontiguousarray(block), int(nsamps)
        tm = self._time_major(block)
        n = tm.shape[0]
        if self.nbits < 8:
            tm = pack_bits(tm, self.nbits)     # unpacked values: packed (a copy)
        return tm, n

    def _out(self, out, nout):
        if out is None:
            return np.empty((self.ndm, int(nout.max())), np.float32)
        if not isinstance(out, np.ndarray) or out.dtype != np.float32 or out.ndim != 2:
            raise TypeError("out: expected a 2-D float32 NumPy array")
        if out.shape[0] != self.ndm or out.shape[1] < nout.max():
            raise ValueError(f"out: shape {out.shape}, the plan writes {self.ndm} x "
                             f"{int(nout.max())}")
        if not out.flags.writeable or out.strides[1] != 4 or out.strides[0] % 4 or \
                out.strides[0] < 0:
            raise ValueError("out: rows must be contiguous float32 (a slice of columns is fine)")
        return out

    def execute(self, block, out=None, nsamps=None):
        """Dedisperse a block of spectra: an array (samples, nchans) — or its
        transpose (nchans, samples), as ``read_block`` gives — of the plan's
        sample dtype (uint8/int8, uint16/int16, float32; 1, 2 and 4-bit
        values as uint8, packed here; or the packed bytes with ``nsamps``).

        Returns a float32 array (ndm, nout), nout = nsamps - max delay; a
        scrunched plan returns a list of each DM's series (views of one
        array). ``out``: a float32 array (ndm, >= nout) to write into instead
        (rows contiguous; a column slice of a larger array works). The block
        and out are passed to the library in place."""
        raw, n = self._block(block, nsamps)
        nout = self.nout(n)
        if nout.max() <= 0:
            raise _lib.DataError(f"block of {n} spectra: not longer than the plan's maximum "
                                 f"delay ({self.max_delay} samples)", _lib.EDATA)
        res = self._out(out, nout)
        _lib.check(lib.ddtk_plan_execute(self._handle(), n, raw.ctypes.data, self.nbits,
                                          res.ctypes.data, res.strides[0] // 4, 32))
        if self.scrunched:
            return [res[i, :nout[i]] for i in range(self.ndm)]
        return res if out is not None else res[:, :nout[0]]

    # ---- streaming (ddtk_plan_stream) ----

    def stream(self, source, callback=None, per_dm=False, pad=False, search=None, rfi=None,
               mask=None, rfi_clip=None, progress=None):
        """Dedisperse a whole input in bounded memory with the library's
        streaming (ddtk_plan_stream, the tools' engine): ``source`` a file
        path ("-": standard input; a list of paths: the PSRFITS files of one
        observation in time order, read as one), a ``Reader``, or an
        iterable of blocks as ``execute`` takes them, consecutive in time.

        ``callback(t0, series)`` gets each gulp's output samples from sample
        t0 of every DM, a float32 (ndm, n) array valid during the call only,
        in time order. With ``per_dm=True``, ``callback(dm, offset, x)`` gets
        each DM's samples as the library makes them (x a view of its buffer,
        valid during the call; scrunched plans stream this way only). An
        exception in the callback stops the run and is raised here. ``pad``
        extends every series to the input's length with its mean (--pad).

        ``search``: True, or a dict of ``search_params`` keywords (snr,
        max_width, baseline, ...), searches every series for single pulses
        as it is made (``dd_* --search``: the same candidates as spsearch on
        the series written); the callback is then optional.

        RFI excision of a file's samples before any backend sees them, as the
        tools' options: ``rfi="auto"`` (--rfi auto: IQRM channel flags and
        zero-DM clipping, ``rfi_clip`` its threshold in robust sigmas, 5) and
        ``mask`` (--mask: a PRESTO rfifind mask file). Killfiles and
        --zerodm are the plan's (``kill``, ``zerodm``).

        ``progress(stage, done, total)``: called with stage "start", then
        "update" after each gulp, then "end"; done and total count spectra
        (total None when the source does not know its length). It may be
        called from the library's threads; an exception in it is raised when
        the run has ended.

        Returns the run's figures (a dict: nin, nout, ndm, wall, kernel,
        adds, backend), with ``candidates`` (SPS_CAND_DTYPE) and ``giants``
        when searching and ``rfi`` (what the excision replaced: a dict of
        ddtk_rfi_report's counts) when cleaning."""
        if self.scrunched and callback is not None and not per_dm:
            raise _lib.UsageError("stream: a scrunched plan's DMs have series of several "
                                  "lengths: use per_dm=True", _lib.EUSAGE)
        if callback is None and not search:
            raise TypeError("stream: give a callback, or search=")
        if callback is not None and not callable(callback):
            raise TypeError("callback: expected a function")
        sink, state, keep = None, None, []
        if callback is not None:
            sink = _lib.Sink()
            state = _PerDm(callback) if per_dm else _Gulps(self.ndm, callback)
            fn = _lib.SERIES_FN(state.write)
            keep.append(fn)
            lib.ddtk_sink_callback(ctypes.byref(sink), fn, None)
            sink.serial = 1                     # Python runs one callback at a time anyway
        clean = _clean_opts(rfi, mask, rfi_clip)
        if search:
            return self._search_run(source, sink, pad, state, sps.params_of(search), clean,
                                    progress)
        return self._run(source, sink, pad, state, clean, progress)

    def _search_run(self, source, next_sink, pad, state, params, clean, progress):
        """The stream through the search's sink (ddtk_sps_sink) in front of next_sink."""
        t = _lib.SpsSink()
        _lib.check(lib.ddtk_sps_sink_init(ctypes.byref(t), ctypes.byref(params), self._handle(),
                                          ctypes.byref(next_sink) if next_sink else None))
        try:
            stats = self._run(source, t.sink, pad, state, clean, progress)
            c, n = ctypes.POINTER(_lib.SpsCand)(), ctypes.c_int64()
            _lib.check(lib.ddtk_sps_sink_finish(ctypes.byref(t), ctypes.byref(c),
                                                ctypes.byref(n)))
            stats["giants"] = int(lib.ddtk_sps_giants(t.search))
            stats["candidates"] = sps.take_candidates(c, n.value)
            return stats
        finally:
            lib.ddtk_sps_sink_free(ctypes.byref(t))

    def _open(self, source):
        """A file source (a path, paths or a Reader) opened by the library."""
        inp = _lib.Input()
        paths = _paths_of(source)
        _lib.check(_open_input(inp, paths))
        rc = lib.ddtk_input_require_filterbank(ctypes.byref(inp))
        h = inp.hdr
        if not rc and ((h.nchans or 1) != self.nchans or h.nbits != self.nbits or
                       h.nifs != self.nifs):
            rc = _lib.fail(_lib.EUSAGE, f"{inp.name.decode(errors='replace')}: {h.nchans} "
                           f"channels, {h.nbits}-bit, {h.nifs} IFs; the plan is for "
                           f"{self.nchans}, {self.nbits}-bit, {self.nifs}")
        if rc:
            lib.ddtk_input_close(ctypes.byref(inp))
            _lib.check(rc)
        return inp

    def _run(self, source, sink, pad, state=None, clean=None, progress=None):
        src = _lib.Source()
        inp, feeder = None, None
        if _is_file_source(source):
            inp = self._open(source)
            if clean is not None:
                rc = lib.ddtk_input_clean(ctypes.byref(inp), ctypes.byref(clean))
                if rc:
                    lib.ddtk_input_close(ctypes.byref(inp))
                    _lib.check(rc)
            lib.ddtk_source_file(ctypes.byref(src), ctypes.byref(inp))
        else:
            if clean is not None:
                raise _lib.UsageError("rfi and mask clean a file's samples: give a path",
                                      _lib.EUSAGE)
            feeder = _BlockSource(self, iter(source))
            src.name, src.nsamples = b"blocks", -1
            src.read = _lib.SOURCE_READ(feeder.read)
        opts = _lib.StreamOptions(pad=int(bool(pad)), quiet=int(progress is None))
        stats = _lib.RunStats()
        report = None
        try:
            with _Progress(progress):
                rc = lib.ddtk_plan_stream(self._handle(), ctypes.byref(src), ctypes.byref(sink),
                                          ctypes.byref(opts), ctypes.byref(stats))
            if inp is not None and inp.clean:
                r = _lib.RfiReport()
                lib.ddtk_input_clean_report(ctypes.byref(inp), ctypes.byref(r))
                report = {k: int(getattr(r, k)) for k, _ in _lib.RfiReport._fields_}
        finally:
            if inp is not None:
                lib.ddtk_input_close(ctypes.byref(inp))
        for side in (feeder, state):
            if side is not None and side.error is not None:
                raise side.error
        _lib.check(rc)
        _Progress.raise_pending()
        out = {"nin": stats.nin, "nout": stats.nout, "ndm": stats.ndm, "wall": stats.wall,
               "kernel": stats.kernel, "adds": stats.adds,
               "backend": (stats.backend or b"").decode()}
        if report is not None:
            out["rfi"] = report
        return out


class _Progress:
    """The library's progress handler (process-wide) set to a Python
    callable for one run, and back to none after it."""

    STAGES = ("start", "update", "end")
    pending = None                              # an exception of the callable

    def __init__(self, fn):
        if fn is not None and not callable(fn):
            raise TypeError("progress: expected a function")
        self.fn, self.cfn = fn, None

    def _call(self, ctx, stage, what, done, total):
        try:
            self.fn(self.STAGES[stage] if 0 <= stage < 3 else stage, int(done),
                    None if total < 0 else int(total))
        except BaseException as e:              # raised once the run has ended
            if _Progress.pending is None:
                _Progress.pending = e

    def __enter__(self):
        if self.fn is not None:
            _Progress.pending = None
            self.cfn = _lib.PROGRESS_FN(self._call)
            lib.ddtk_set_progress_handler(self.cfn, None)
        return self

    def __exit__(self, *exc):
        if self.fn is not None:
            lib.ddtk_set_progress_handler(_lib.PROGRESS_FN(), None)

    @staticmethod
    def raise_pending():
        e, _Progress.pending = _Progress.pending, None
        if e is not None:
            raise e


class _Gulps:
    """The callback sink's calls, one per DM and gulp, gathered into (ndm, n)
    arrays handed on in time order."""

    def __init__(self, ndm, callback):
        self.ndm, self.callback, self.error = ndm, callback, None
        self.open = {}                          # offset -> [buffer, DMs written]
        self.next = 0                           # the offset handed on next

    def write(self, ctx, dm, offset, x, n):
        try:
            if offset not in self.open:
                self.open[offset] = [np.empty((self.ndm, n), np.float32), 0]
            g = self.open[offset]
            ctypes.memmove(g[0][dm].ctypes.data, x, n * 4)
            g[1] += 1
            while self.next in self.open and self.open[self.next][1] == self.ndm:
                buf = self.open.pop(self.next)[0]
                self.callback(self.next, buf)
                self.next += buf.shape[1]
            return 0
        except BaseException as e:              # the run stops; stream raises it
            self.error = e
            return _lib.fail(_lib.ESYS, f"callback: {e!r}")


class _PerDm:
    def __init__(self, callback):
        self.callback, self.error = callback, None

    def write(self, ctx, dm, offset, x, n):
        try:
            self.callback(dm, offset, np.ctypeslib.as_array(x, (n,)))
            return 0
        except BaseException as e:
            self.error = e
            return _lib.fail(_lib.ESYS, f"callback: {e!r}")


class _BlockSource:
    """A source over an iterable of blocks: the spectra each read asks for,
    copied (packed, for sub-byte samples) into the library's buffer."""

    def __init__(self, plan, blocks):
        self.plan, self.blocks, self.error = plan, blocks, None
        self.pending, self.npending = [], 0

    def read(self, src, raw, n, got):
        try:
            per = self.plan.nchans * self.plan.nifs
            while self.npending < n:
                b = next(self.blocks, None)
                if b is None:
                    break
                tm = self.plan._time_major(b).reshape(-1, per)
                self.pending.append(tm)
                self.npending += tm.shape[0]
            take = min(n, self.npending)
            parts, left = [], take
            while left:
                head = self.pending[0]
                parts.append(head[:left])
                if head.shape[0] > left:
                    self.pending[0] = head[left:]
                    left = 0
                else:
                    self.pending.pop(0)
                    left -= head.shape[0]
            self.npending -= take
            if self.plan.nbits < 8:
                parts = [pack_bits(np.concatenate(parts) if len(parts) > 1 else parts[0],
                                   self.plan.nbits)] if parts else []
            at = raw
            for part in parts:
                ctypes.memmove(at, part.ctypes.data, part.nbytes)
                at += part.nbytes
            got[0] = take
            return 0
        except BaseException as e:
            self.error = e
            return _lib.fail(_lib.EDATA, f"blocks: {e!r}")


def dedisperse(path, dms, *, rfi=None, mask=None, rfi_clip=None, progress=None, **options):
    """Dedisperse a filterbank at each DM of ``dms`` with the tools' engine
    (ddtk_plan_stream from the file into memory): a float32 array
    (len(dms), N), N = the file's spectra - the largest delay, each row what
    ``dd_direct path --dm-list`` writes for that DM, byte for byte, and
    written there directly. ``path``: a SIGPROC filterbank or PSRFITS file,
    or a list of the PSRFITS files of one observation. ``rfi``, ``mask``,
    ``rfi_clip`` and ``progress`` are ``Plan.stream``'s (the tools' --rfi,
    --mask, --rfi-clip); ``options`` are ``Plan``'s (algorithm, params,
    backend, gpu, kill, fref, zerodm, ...); a plan with ``scrunch`` or
    ``downsamp`` gives a list of each DM's series."""
    paths = _paths_of(path)
    with Reader(paths if len(paths) > 1 else paths[0]) as reader, \
            Plan(reader, dms=dms, name=reader.path, **options) as plan:
        nout = plan.nout(reader.nsamples)
        if nout.max() <= 0:
            raise _lib.DataError(f"{reader.path}: {reader.nsamples} spectra, not more than the "
                                 f"maximum delay ({plan.max_delay} samples)", _lib.EDATA)
        out = np.empty((plan.ndm, int(nout.max())), np.float32)
        sink = _lib.Sink()
        lib.ddtk_sink_memory(ctypes.byref(sink), out.ctypes.data, out.shape[1])
        plan._run(paths, sink, False, clean=_clean_opts(rfi, mask, rfi_clip), progress=progress)
        if plan.scrunched:
            return [out[i, :nout[i]] for i in range(plan.ndm)]
        return out
