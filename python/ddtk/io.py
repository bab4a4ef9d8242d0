"""Filterbank and time-series input (SIGPROC, and PSRFITS search mode read
as a filterbank of its total intensity): headers as dicts, blocks of
spectra as NumPy arrays (raw, time-major, as the plans take them; or
unpacked, channels x samples).

The header and the data's layout come from the library (ddtk_input_open):
the same parser, checks and messages as the tools. SIGPROC samples are read
straight into NumPy buffers at their offset; PSRFITS ones through the
library's reader (ddtk_input_read), which goes forward only: reading back
reopens the file.
"""

import ctypes
import os

import numpy as np

from . import _lib
from ._lib import lib

_INT_KEYS = ("telescope_id", "machine_id", "data_type", "barycentric", "pulsarcentric",
             "nchans", "nbits", "nifs", "nbeams", "ibeam", "nbins")
_FLOAT_KEYS = ("az_start", "za_start", "src_raj", "src_dej", "tstart", "tsamp", "period",
               "fch1", "foff", "refdm")


def sample_dtype(nbits, signed=False):
    """The NumPy dtype of one sample of nbits (1, 2 and 4-bit samples: uint8,
    one value per element once unpacked)."""
    if nbits in (1, 2, 4):
        return np.dtype(np.uint8)
    if nbits == 8:
        return np.dtype(np.int8 if signed else np.uint8)
    if nbits == 16:
        return np.dtype(np.int16 if signed else np.uint16)
    if nbits == 32:
        return np.dtype(np.float32)
    raise _lib.UsageError(f"nbits {nbits}: expected 1, 2, 4, 8, 16 or 32", _lib.EUSAGE)


def unpack_bits(raw, nbits, nvalues):
    """Sub-byte samples (1, 2, 4 bits, low bits first, as SIGPROC packs
    them) to one uint8 per value: the first nvalues of the bit stream."""
    shifts = np.arange(0, 8, nbits, dtype=np.uint8)
    vals = (np.asarray(raw, dtype=np.uint8)[:, None] >> shifts) & np.uint8((1 << nbits) - 1)
    return vals.reshape(-1)[:nvalues]


def pack_bits(values, nbits):
    """The inverse of unpack_bits: uint8 values below 2**nbits, packed low
    bits first (the last byte zero-filled)."""
    v = np.asarray(values, dtype=np.uint8).reshape(-1)
    if v.size and int(v.max()) >> nbits:
        raise _lib.UsageError(f"values above {(1 << nbits) - 1} for {nbits}-bit samples",
                              _lib.EUSAGE)
    per_byte = 8 // nbits
    pad = (-v.size) % per_byte
    if pad:
        v = np.concatenate([v, np.zeros(pad, np.uint8)])
    shifts = np.arange(0, 8, nbits, dtype=np.uint8)
    return np.bitwise_or.reduce(v.reshape(-1, per_byte) << shifts, axis=1).astype(np.uint8)


def paths_of(source):
    """A source's file names: a path, a Reader's, or a list of paths."""
    if isinstance(source, Reader):
        return list(source.paths)
    if isinstance(source, (str, bytes, os.PathLike)):
        return [source]
    return list(source)


def is_file_source(source):
    """A path, a Reader, or a non-empty list or tuple of paths."""
    if isinstance(source, (str, bytes, os.PathLike, Reader)):
        return True
    return isinstance(source, (list, tuple)) and len(source) > 0 and \
        all(isinstance(p, (str, bytes, os.PathLike)) for p in source)


def open_input(inp, paths):
    """ddtk_input_open (one path) or ddtk_input_open_files (several: the
    PSRFITS files of one observation in time order); the library's code."""
    if len(paths) == 1:
        return lib.ddtk_input_open(ctypes.byref(inp), os.fsencode(paths[0]))
    arr = (ctypes.c_char_p * len(paths))(*[os.fsencode(p) for p in paths])
    return lib.ddtk_input_open_files(ctypes.byref(inp), arr, len(paths))


def clean_opts(rfi=None, mask=None, rfi_clip=None):
    """The tools' --rfi, --mask and --rfi-clip as ddtk_clean_opts (None:
    no cleaning): ``rfi`` "auto" or "none", ``mask`` an rfifind mask's
    path, ``rfi_clip`` the zero-DM clipping threshold (robust sigmas)."""
    if rfi not in (None, "none", "auto"):
        raise _lib.UsageError(f"rfi {rfi!r}: expected 'auto' or 'none'", _lib.EUSAGE)
    if rfi_clip is not None and not float(rfi_clip) > 0:
        raise _lib.UsageError(f"rfi_clip {rfi_clip}: must be > 0", _lib.EUSAGE)
    if rfi != "auto" and mask is None:
        if rfi_clip is not None:
            raise _lib.UsageError("rfi_clip goes with rfi='auto'", _lib.EUSAGE)
        return None
    o = _lib.CleanOpts()
    o.auto_rfi = int(rfi == "auto")
    o.mask = os.fsencode(mask) if mask is not None else None
    o.clip_sigma = float(rfi_clip or 0)
    return o


class Reader(_lib.Closing):
    """An open SIGPROC filterbank or time series, or PSRFITS search-mode
    file (a list of paths: the PSRFITS files of one observation in time
    order, read as one).

    ``Reader(path)`` reads and checks the header (``reader.header``, a dict as
    ``read_header`` gives); ``read(start, count)`` returns spectra as the file
    holds them and ``read_block(start, count)`` unpacked as channels x
    samples. ``rfi``, ``mask`` and ``rfi_clip``: the samples read are
    cleaned as the tools' --rfi auto, --mask and --rfi-clip clean them
    (blocks counted from the start of the file, whatever the reads).
    A context manager; ``close()`` ends it.
    """

    def __init__(self, path, *, rfi=None, mask=None, rfi_clip=None):
        self._open, self._fh, self._delivered = False, None, 0
        paths = path if isinstance(path, (list, tuple)) else [path]
        for p in paths:
            if not isinstance(p, (str, bytes, os.PathLike)):
                raise TypeError(f"path: expected a file name, got {type(p).__name__}")
            if os.fsdecode(p) == "-":
                raise ValueError("'-': a Reader needs a file; stream standard input with "
                                 "Plan.stream over an iterable of blocks")
        if not paths:
            raise ValueError("path: no files")
        self.paths = [os.fsdecode(p) for p in paths]
        self._clean = clean_opts(rfi, mask, rfi_clip)
        self._in = _lib.Input()
        self._input_close = lib.ddtk_input_close              # kept for shutdown
        self._reopen()
        self.path = self.paths[0]
        self.header = _header_dict(self._in)
        self.header["path"] = self.path
        if len(self.paths) > 1:
            self.header["paths"] = list(self.paths)
        self.psrfits = bool(self._in.psrfits)
        self.header["format"] = "psrfits" if self.psrfits else "sigproc"
        h = self._in.hdr
        self.nchans, self.nbits, self.nifs = h.nchans or 1, h.nbits, h.nifs
        self.signed = h.signed_data == 1
        self.nsamples = self._in.nsamples
        self.bits_per_spectrum = self._in.bits_per_spectrum

    def _reopen(self):
        """(Re)open the input at its first spectrum, with its cleaning."""
        if self._open:
            self._input_close(ctypes.byref(self._in))
            self._open = False
        _lib.check(open_input(self._in, self.paths))
        self._open = True
        if self._clean is not None:
            _lib.check(lib.ddtk_input_clean(ctypes.byref(self._in), ctypes.byref(self._clean)))

    def close(self):
        if self._open:
            self._input_close(ctypes.byref(self._in))
            self._open = False
        if self._fh:
            self._fh.close()
            self._fh = None

    def nbytes(self, count):
        """Bytes holding count spectra (rounded up)."""
        return -(-count * self.bits_per_spectrum // 8)

    def read_raw(self, start, count, out=None):
        """count spectra from spectrum start as raw bytes (into out, a
        writable uint8 buffer, when given); start * bits_per_spectrum must be
        a multiple of 8. Returns the filled uint8 array (fewer spectra at the
        end of the file)."""
        if start < 0 or count < 0:
            raise ValueError(f"{self.path}: start {start} and count {count} must be >= 0")
        if (start * self.bits_per_spectrum) % 8:
            raise ValueError(f"{self.path}: spectrum {start} does not start on a byte")
        count = max(0, min(count, self.nsamples - start))
        n = self.nbytes(count)
        if out is None:
            out = np.empty(n, np.uint8)
        elif out.dtype != np.uint8 or out.ndim != 1 or out.size < n or \
                not out.flags.c_contiguous:
            raise ValueError(f"out: expected a contiguous uint8 array of at least {n} bytes")
        if self.psrfits or self._clean is not None:
            self._library_read(start, count, out)
            return out[:n]
        if self._fh is None:
            self._fh = open(self.path, "rb", buffering=0)
        self._fh.seek(self._in.hdr.header_bytes + start * self.bits_per_spectrum // 8)
        got = self._fh.readinto(memoryview(out)[:n])
        if got != n:
            raise _lib.DataError(f"{self.path}: file shorter than its {self.nsamples} spectra",
                                 _lib.EDATA)
        return out[:n]

    def _library_read(self, start, count, out):
        """count spectra from start through ddtk_input_read: forward only,
        so an earlier start reopens the input and a later one reads past."""
        if start < self._delivered:
            self._reopen()
            self._delivered = 0
        got = ctypes.c_int64()
        skip = start - self._delivered
        if skip:
            scratch = np.empty(self.nbytes(min(skip, 1 << 14)), np.uint8)
        while skip:
            k = min(skip, 1 << 14)
            _lib.check(lib.ddtk_input_read(ctypes.byref(self._in), scratch.ctypes.data, k,
                                           ctypes.byref(got)))
            skip -= k
            self._delivered += got.value
        _lib.check(lib.ddtk_input_read(ctypes.byref(self._in), out.ctypes.data, count,
                                       ctypes.byref(got)))
        self._delivered += got.value
        if got.value != count:
            raise _lib.DataError(f"{self.path}: {got.value} of {count} spectra read",
                                 _lib.EDATA)

    def read(self, start=0, count=None):
        """Spectra [start, start + count) time-major, as the file holds them:
        an array (count, nchans) (or (count, nifs, nchans)) of the samples'
        dtype for 8, 16 and 32 bits (no copy beyond the read); for 1, 2 and
        4 bits the packed bytes (``Plan.execute(raw, nsamps=count)``)."""
        if count is None:
            count = self.nsamples - start
        raw = self.read_raw(start, count)
        if self.nbits < 8:
            return raw
        n = raw.size * 8 // self.bits_per_spectrum
        shape = (n, self.nchans) if self.nifs == 1 else (n, self.nifs, self.nchans)
        return raw.view(sample_dtype(self.nbits, self.signed)).reshape(shape)

    def read_block(self, start=0, count=None):
        """Spectra [start, start + count) unpacked, channels x samples (file
        channel order; (nchans, nifs, count) with several IFs): a transposed
        view of the time-major samples (1, 2 and 4-bit values as uint8), so
        ``Plan.execute`` takes it without a copy."""
        if count is None:
            count = self.nsamples - start
        raw = self.read_raw(start, count)
        n = raw.size * 8 // self.bits_per_spectrum
        per = self.nchans * self.nifs
        if self.nbits < 8:
            vals = unpack_bits(raw, self.nbits, n * per)
        else:
            vals = raw.view(sample_dtype(self.nbits, self.signed))
        shape = (n, self.nchans) if self.nifs == 1 else (n, self.nifs, self.nchans)
        return vals.reshape(shape).T


def _header_dict(inp):
    h = inp.hdr
    hp = ctypes.byref(h)

    def has(key):
        return lib.ddtk_header_has(hp, key.encode()) != 0

    d = {}
    for k in _INT_KEYS:
        if has(k):
            d[k] = int(getattr(h, k))
    for k in _FLOAT_KEYS:
        if has(k):
            d[k] = float(getattr(h, k))
    for k in ("source_name", "rawdatafile"):
        if has(k):
            d[k] = getattr(h, k).decode("utf-8", "replace")
    if has("signed"):
        d["signed"] = int(h.signed_data)
    if has("npuls"):
        d["npuls"] = int(h.npuls)
    if has("nsamples"):
        d["header_nsamples"] = int(h.nsamples)
    if "telescope_id" in d:
        d["telescope"] = lib.ddtk_telescope_name(h.telescope_id).decode()
    if "machine_id" in d:
        d["machine"] = lib.ddtk_machine_name(h.machine_id).decode()
    nchans = h.nchans or 1
    if inp.dead:
        d["dead"] = np.ctypeslib.as_array(inp.dead, (nchans,)).astype(bool)
    d["nsamples"] = int(inp.nsamples)
    d["header_bytes"] = int(h.header_bytes)
    d["freqs"] = np.array([lib.ddtk_chan_freq(hp, c) for c in range(nchans)])
    return d


def read_header(path):
    """The SIGPROC header of a filterbank or time series as a dict: every
    keyword the file has (``signed`` for the signed keyword; the header's own
    nsamples keyword as ``header_nsamples``), and ``nsamples`` (spectra in the
    file, from its size), ``header_bytes``, ``freqs`` (each channel's centre
    frequency in MHz, file order), ``telescope`` and ``machine`` names,
    ``path``, ``format`` ("sigproc" or "psrfits") and, where the input marks
    channels dead (PSRFITS weights of 0), ``dead`` (a bool per channel,
    killed by plans made from the header, as the tools do). ``path``: a
    file, or a list of the PSRFITS files of one observation (``paths``
    then lists them, and nsamples counts them all).
    Raises ddtk.Error subclasses with the library's message."""
    with Reader(path) as r:
        return r.header


def read_block(path, start=0, count=None):
    """Spectra [start, start + count) of a file, unpacked, channels x samples
    (see ``Reader.read_block``)."""
    with Reader(path) as r:
        return r.read_block(start, count)
