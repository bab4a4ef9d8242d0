"""Dedispersion plans on NumPy arrays (ddtk_plan_create / ddtk_plan_execute),
streaming of long inputs in bounded memory, and the one-call
``dedisperse(path, dms)``.

``Plan.execute`` hands the library the block's and the output's own buffers:
a time-major block (spectrum after spectrum, as files hold them, or the
channels x samples view ``Reader.read_block`` returns, which is its
transpose) is read where it lies, and each DM's series is written straight
into its row of the result (or of ``out=``).
"""

import ctypes
import os

import numpy as np

from . import _lib, dmplan
from ._lib import lib
from .io import Reader, pack_bits, sample_dtype

# Each algorithm's parameters (fields of ddtk_plan_desc today) and the
# Python names they go by.
ALGORITHM_PARAMS = {
    "direct": {},
    "tree": {"method": "tree_method", "chans": "tree_chans"},
    "subband": {"nsub": "nsub", "dm_group": "dm_group", "sub_dm": "sub_dm",
                "max_smear_ratio": "max_smear_ratio"},
}

DEFAULT_GULP = 1 << 16


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
    if isinstance(header, (str, bytes, os.PathLike)):
        with Reader(header) as r:
            return r.header
    raise TypeError(f"header: expected a dict from read_header, a Reader or a path, "
                    f"got {type(header).__name__}")


class Plan:
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

    ``algorithm`` is "direct", "tree" or "subband", with ``params`` a dict of
    its parameters (tree: method, chans; subband: nsub, dm_group, sub_dm,
    max_smear_ratio). ``backend`` "auto", "cpu" or "gpu" and ``gpu`` (index).
    Also: ``kill`` (per channel, true = killed), ``fref`` (MHz), ``kdm``,
    ``rounding`` ("nearest" or "floor"), ``zerodm``, ``pol`` (IF index or
    "sum"), ``threads``, ``chan_bw``. ``wisdom``: True reads the tools' wisdom
    file ($DDTK_WISDOM, else the cache), a path that file, False none.

    Failures raise ``ddtk.Error`` subclasses with the library's message.
    """

    def __init__(self, header=None, *, freqs=None, tsamp=None, nbits=None, nifs=None,
                 signed=None, chan_bw=None, dms=None, dm_range=None, dm_step=None, tol=1.25,
                 pulse_width=40.0, scrunch=False, downsamp=None, algorithm="direct",
                 params=None, backend="auto", gpu=0, kill=None, fref=None, kdm=None,
                 rounding="nearest", zerodm=False, pol=None, threads=0, wisdom=True,
                 verbose=False, name=None):
        self._plan = None
        h = _header_of(header) if header is not None else {}
        if freqs is None:
            if "freqs" not in h:
                raise _lib.UsageError("a plan needs a header or freqs", _lib.EUSAGE)
            freqs = h["freqs"]
        if tsamp is None:
            if "tsamp" not in h:
                raise _lib.UsageError("a plan needs a header or tsamp", _lib.EUSAGE)
            tsamp = h["tsamp"]
        nbits = nbits if nbits is not None else h.get("nbits", 32)
        nifs = nifs if nifs is not None else h.get("nifs", 1)
        signed = bool(signed if signed is not None else h.get("signed", 0) == 1)
        if chan_bw is None and h.get("foff"):
            chan_bw = abs(h["foff"])
        f = _f64("freqs", freqs)
        if f.size < 1:
            raise _lib.UsageError("freqs: at least one channel", _lib.EUSAGE)
        self.freqs, self.tsamp = f, float(tsamp)
        self.nchans, self.nbits, self.nifs, self.signed = f.size, int(nbits), int(nifs), signed
        self.dtype = sample_dtype(self.nbits, signed)
        d = _lib.PlanDesc()
        lib.ddtk_plan_desc_init(ctypes.byref(d))
        if kdm is not None:
            d.kdm = float(kdm)
        dm_a, ds_a = self._dm_trials(dms, dm_range, dm_step, tol, pulse_width, scrunch,
                                     downsamp, d.kdm)
        d.name = os.fsencode(name if name is not None else h.get("path", "plan"))
        d.nchans, d.tsamp, d.freqs = f.size, self.tsamp, _ptr(f, ctypes.c_double)
        if chan_bw:
            d.chan_bw = float(chan_bw)
        d.nbits, d.nifs, d.signed_data = self.nbits, self.nifs, int(signed)
        if pol is not None:
            d.pol = _lib.POL_SUM if pol == "sum" else int(pol)
        kill_a = None
        if kill is not None:
            kill_a = np.ascontiguousarray(kill, dtype=bool).astype(np.uint8).reshape(-1)
            if kill_a.size != f.size:
                raise _lib.UsageError(f"kill: {kill_a.size} values for {f.size} channels",
                                      _lib.EUSAGE)
            d.kill = _ptr(kill_a, ctypes.c_uint8)
        d.dms, d.ndm = _ptr(dm_a, ctypes.c_double), dm_a.size
        d.downsamp = _ptr(ds_a, ctypes.c_int)
        if fref is not None:
            d.fref = float(fref)
        d.rounding = _choice("rounding", rounding, _lib.ROUNDING)
        d.zerodm = int(bool(zerodm))
        d.algorithm = _choice("algorithm", algorithm, _lib.ALGORITHMS)
        allowed = ALGORITHM_PARAMS[algorithm]
        for k, v in (params or {}).items():
            if k not in allowed:
                raise _lib.UsageError(
                    f"{algorithm}: no parameter {k!r} (it has: {', '.join(allowed) or 'none'})",
                    _lib.EUSAGE)
            field = allowed[k]
            setattr(d, field, type(getattr(d, field))(v))
        d.backend = _choice("backend", backend, _lib.BACKENDS)
        d.gpu, d.threads = int(gpu), int(threads)
        d.quiet, d.verbose = int(not verbose), int(bool(verbose))
        self.wisdom_found = self._apply_wisdom(d, wisdom)

        plan = ctypes.c_void_p()
        _lib.check(lib.ddtk_plan_create(ctypes.byref(plan), ctypes.byref(d)))
        self._plan = plan
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
            lib.ddtk_plan_destroy(self._plan)
            self._plan = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

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

    # ---- streaming ----

    def stream(self, source, callback, gulp=DEFAULT_GULP):
        """Dedisperse a long input in bounded memory: ``source`` a file path
        (or ``Reader``) or an iterable of blocks (as ``execute`` takes them,
        consecutive in time). ``callback(t0, series)`` gets each run of
        output samples from sample t0: a float32 (ndm, n) array valid during
        the call only (its buffer is reused). Returns the output length.

        Gulps of ``gulp`` output samples overlap by the maximum delay, each
        an ``execute`` of the plan (series equal dd_direct's byte for byte).
        Implemented here in Python until the library's ddtk_plan_stream is
        public; scrunched plans are not streamed."""
        if self.scrunched:
            raise _lib.UsageError("stream: scrunched plans are not streamed from Python yet "
                                  "(they need the library's ddtk_plan_stream)", _lib.EUSAGE)
        if gulp < 1:
            raise ValueError(f"gulp {gulp}: expected >= 1")
        if isinstance(source, (str, bytes, os.PathLike, Reader)):
            return self._stream_file(source, callback, gulp, None)
        return self._stream_blocks(source, callback, gulp)

    def _stream_file(self, source, callback, gulp, out):
        reader = source if isinstance(source, Reader) else Reader(source)
        try:
            return self._file_gulps(reader, callback, gulp, out)
        finally:
            if reader is not source:
                reader.close()

    def _file_gulps(self, reader, callback, gulp, out):
        """Gulps of a file read into one reused buffer; a gulp starts on a
        byte (sub-byte samples), recomputing the few outputs before it."""
        if reader.nchans != self.nchans or reader.nbits != self.nbits or \
                reader.nifs != self.nifs:
            raise _lib.UsageError(f"{reader.path}: {reader.nchans} channels, {reader.nbits}-bit, "
                                  f"{reader.nifs} IFs; the plan is for {self.nchans}, "
                                  f"{self.nbits}-bit, {self.nifs}", _lib.EUSAGE)
        md, total = self.max_delay, reader.nsamples
        ntotal = total - md
        if ntotal <= 0:
            raise _lib.DataError(f"{reader.path}: {total} spectra, not more than the maximum "
                                 f"delay ({md} samples)", _lib.EDATA)
        align = 8 // np.gcd(reader.bits_per_spectrum, 8)
        raw = np.empty(reader.nbytes(gulp + md + align), np.uint8)
        buf = None if out is not None else np.empty((self.ndm, gulp + align), np.float32)
        t = 0
        while t < ntotal:
            s0 = t - t % align
            nin = min(gulp + md + (t - s0), total - s0)
            block = reader.read_raw(s0, nin, out=raw)
            dst = out[:, s0:s0 + nin - md] if out is not None else buf
            lib_rc = lib.ddtk_plan_execute(self._handle(), nin, block.ctypes.data, self.nbits,
                                           dst.ctypes.data, dst.strides[0] // 4, 32)
            _lib.check(lib_rc)
            if callback:
                callback(t, buf[:, t - s0:nin - md])
            t = s0 + nin - md
        return ntotal

    def _stream_blocks(self, blocks, callback, gulp):
        """Blocks joined to the last max-delay spectra of the one before."""
        md, carry, t, buf = self.max_delay, None, 0, None
        for block in blocks:
            tm = self._time_major(block)
            if carry is not None:
                tm = np.concatenate([carry, tm])
            nout = tm.shape[0] - md
            if nout <= 0:
                carry = tm
                continue
            if buf is None or buf.shape[1] < nout:
                buf = np.empty((self.ndm, max(nout, gulp)), np.float32)
            self.execute(tm, out=buf)
            callback(t, buf[:, :nout])
            t += nout
            carry = tm[nout:].copy()
        return t


def dedisperse(path, dms, **options):
    """Dedisperse a filterbank at each DM of ``dms``: a float32 array
    (len(dms), N), N = the file's spectra - the largest delay, each row
    what ``dd_direct path --dm-list`` writes for that DM (byte for byte).
    ``options`` are ``Plan``'s (algorithm, params, backend, gpu, kill, fref,
    zerodm, ...); memory beyond the result is one gulp (``gulp=`` spectra)."""
    gulp = options.pop("gulp", DEFAULT_GULP)
    with Reader(path) as reader, Plan(reader, dms=dms, name=path, **options) as plan:
        if plan.scrunched:
            raise _lib.UsageError("dedisperse: scrunched DMs give series of several lengths; "
                                  "use Plan.execute", _lib.EUSAGE)
        ntotal = reader.nsamples - plan.max_delay
        if ntotal <= 0:
            raise _lib.DataError(f"{reader.path}: {reader.nsamples} spectra, not more than the "
                                 f"maximum delay ({plan.max_delay} samples)", _lib.EDATA)
        out = np.empty((plan.ndm, ntotal), np.float32)
        plan._stream_file(reader, None, gulp, out)
        return out
