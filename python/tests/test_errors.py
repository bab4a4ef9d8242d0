"""Bad arguments raise clear exceptions: the library's own message
(ddtk_errmsg) for what it refuses, a TypeError or ValueError naming the
problem for arrays of the wrong dtype or shape."""

import numpy as np
import pytest

import ddtk
from conftest import fbsim

FREQS = 1500.0 - np.arange(16)


def plan(**kw):
    return ddtk.Plan(freqs=FREQS, tsamp=64e-6, nbits=kw.pop("nbits", 8), dms=[0, 10], **kw)


def test_missing_file_is_an_oserror_naming_it(tmp):
    with pytest.raises(ddtk.SystemError_) as e:
        ddtk.read_header(tmp / "absent.fil")
    assert isinstance(e.value, OSError) and "absent.fil" in str(e.value)
    assert e.value.code == ddtk.ESYS and "\n" not in str(e.value)
    with pytest.raises(OSError):
        ddtk.dedisperse(str(tmp / "absent.fil"), [0])


def test_bad_header_carries_the_librarys_message(tmp):
    bad = tmp / "bad.fil"
    bad.write_bytes(b"\x0c\x00\x00\x00HEADER_STARX" + b"\0" * 64)
    with pytest.raises(ddtk.DataError) as e:
        ddtk.read_header(bad)
    assert "bad.fil" in str(e.value) and e.value.code == ddtk.EDATA


def test_block_of_the_wrong_dtype_or_shape():
    p = plan()
    with pytest.raises(TypeError, match="dtype float64, this plan takes uint8"):
        p.execute(np.zeros((1000, 16)))
    with pytest.raises(ValueError, match=r"shape \(1000, 15\)"):
        p.execute(np.zeros((1000, 15), np.uint8))
    with pytest.raises(TypeError, match="NumPy array"):
        p.execute([[0] * 16] * 1000)
    with pytest.raises(ddtk.DataError, match="maximum delay"):
        p.execute(np.zeros((3, 16), np.uint8))
    with pytest.raises(ValueError, match="out: shape"):
        p.execute(np.zeros((1000, 16), np.uint8), out=np.zeros((1, 10), np.float32))
    with pytest.raises(TypeError, match="out"):
        p.execute(np.zeros((1000, 16), np.uint8), out=np.zeros((2, 1000)))
    with pytest.raises(ValueError, match="values above 3"):
        plan(nbits=2).execute(np.full((1000, 16), 7, np.uint8))


def test_bad_plan_values_raise_the_librarys_message():
    with pytest.raises(ddtk.UsageError, match="unknown algorithm 'fast'"):
        plan(algorithm="fast")
    with pytest.raises(ddtk.UsageError, match="subband algorithm has no parameter 'nsubs'"):
        plan(algorithm="subband", params={"nsubs": 4})
    with pytest.raises(ddtk.UsageError) as e:
        plan(algorithm="subband", params={"nsub": 0})
    assert "nsub" in str(e.value) and str(e.value) == ddtk._lib.errmsg()
    with pytest.raises(ddtk.UsageError, match="piecewise or padded"):
        plan(algorithm="tree", params={"method": "flat"})
    with pytest.raises(ddtk.Error) as e:
        ddtk.Plan(freqs=FREQS, tsamp=-1.0, nbits=8, dms=[0])
    assert e.value.code in (ddtk.EUSAGE, ddtk.EDATA) and "sample time -1" in str(e.value)
    with pytest.raises(ddtk.UsageError, match="nbits 3"):
        ddtk.Plan(freqs=FREQS, tsamp=64e-6, nbits=3, dms=[0])
    with pytest.raises(ddtk.Error) as e:
        ddtk.dm_list(10, 0, freqs=FREQS, tsamp=64e-6)
    assert str(e.value) == ddtk._lib.errmsg()
    with pytest.raises(ValueError, match="closed"):
        p = plan()
        p.close()
        p.execute(np.zeros((1000, 16), np.uint8))


def test_file_and_plan_that_do_not_match(tmp):
    fil = fbsim(tmp / "a.fil", nchans=32, nbits=8, nsamples=500)
    with pytest.raises(ddtk.UsageError, match="32 channels"):
        plan().stream(fil, lambda t, s: None)
    with pytest.raises(ddtk.DataError, match="maximum delay"):
        ddtk.dedisperse(fil, [0, 5000])


def test_fdas_refuses_other_dtypes():
    with pytest.raises(TypeError, match="float32"):
        ddtk.fdas(np.zeros(4096), 0.001)
    with pytest.raises(ValueError, match="one dimension"):
        ddtk.fdas(np.zeros((2, 4096), np.float32), 0.001)


def test_library_warnings_are_python_warnings(tmp):
    damaged = tmp / "wisdom"
    damaged.write_text("not a wisdom file\n\x00\x01garbage\n")
    with pytest.warns(ddtk.LibraryWarning, match="wisdom"):
        p = plan(wisdom=str(damaged))
    assert not p.wisdom_found


def test_algorithms_list_their_parameters():
    algos = ddtk.algorithms()
    assert list(algos) == ["direct", "subband", "tree", "fdmt"] and algos["direct"] == []
    nsub = {p["name"]: p for p in algos["subband"]}["nsub"]
    assert nsub["type"] == "int" and nsub["lo"] == 1
    method = {p["name"]: p for p in algos["tree"]}["method"]
    assert method["choices"] == ["piecewise", "padded"] and method["default"] == 0
