"""CPU = GPU from Python: the same plan on both backends gives the same bytes
for integer input (sums below 2^24), through execute and dedisperse (the
GPU's streaming), for each algorithm. Skips where no GPU is usable. (fdas on
the GPU: test_fdas.py, against the tool on the GPU.)"""

import numpy as np
import pytest

import ddtk
from conftest import fbsim, same_bytes

usable, why = ddtk.gpu_usable(0)
pytestmark = pytest.mark.skipif(not usable, reason=f"no GPU: {why}")


@pytest.mark.parametrize("nbits", [2, 8, 16])
def test_gpu_series_equal_cpu(tmp, nbits):
    fil = fbsim(tmp / "a.fil", nchans=256, nbits=nbits, tsamp=0.000128, nsamples=30000,
                pulse="1,100,0.002,20")
    blk = ddtk.read_block(fil)
    dms = np.arange(0, 200, 1.5)
    cpu = ddtk.Plan(fil, dms=dms, backend="cpu").execute(blk)
    gpu = ddtk.Plan(fil, dms=dms, backend="gpu").execute(blk)
    assert same_bytes(cpu, gpu)
    assert same_bytes(ddtk.dedisperse(fil, dms, backend="gpu", gulp=7000), cpu)


@pytest.mark.parametrize("algorithm,params", [("subband", {"nsub": 16}), ("tree", {"sub_chans": 8})])
def test_gpu_algorithms_equal_cpu(tmp, algorithm, params):
    fil = fbsim(tmp / "a.fil", nchans=128, nbits=8, tsamp=0.000256, nsamples=20000,
                pulse="1,60,0.002,25")
    dms = np.arange(0, 120, 2.0)
    blk = ddtk.read_block(fil)
    cpu = ddtk.Plan(fil, dms=dms, algorithm=algorithm, params=params, backend="cpu")
    gpu = ddtk.Plan(fil, dms=dms, algorithm=algorithm, params=params, backend="gpu")
    assert gpu.backend == "gpu"
    assert same_bytes(cpu.execute(blk), gpu.execute(blk))
