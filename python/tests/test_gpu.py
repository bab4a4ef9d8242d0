"""CPU = GPU from Python: the same plan on both backends gives the same bytes
for integer input (sums below 2^24). Skips where no GPU is usable."""

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


def test_gpu_fdas_finds_the_cpus_candidates(tmp):
    tim = fbsim(tmp / "p.tim", tim=True, tsamp=0.001, nsamples=32768, seed=11,
                pulsar="0.0218,0,0.1,0.8,3.0")
    x = np.fromfile(tim, np.float32, offset=ddtk.read_header(tim)["header_bytes"])
    cpu = ddtk.fdas(x, 0.001, zmax=20, backend="cpu")
    gpu = ddtk.fdas(x, 0.001, zmax=20, backend="gpu")
    assert cpu.size and gpu.size
    assert abs(cpu[0]["freq"] - gpu[0]["freq"]) < 1e-6 and cpu[0]["numharm"] == gpu[0]["numharm"]
