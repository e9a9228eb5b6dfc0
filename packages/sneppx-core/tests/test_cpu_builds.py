"""The x86-64 builds of the compiled core (AVX2, and AVX-512 where the CPU has it): which one loads,
``SNEPPX_CPU``, and that the two compute the same results."""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core import _backend

pytestmark = pytest.mark.skipif(_backend.NAME != "c", reason="needs the compiled core")
BOTH = _backend._avx512_build() is not None and _backend._cpu_has_avx512()


def run(code: str, **env) -> subprocess.CompletedProcess:
    full = dict(os.environ, SNEPPX_BACKEND="c", **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def test_the_loaded_build_is_named_and_reported():
    assert sx._C.__name__ == "sneppx_core._SNEPPX_c"
    cap = sx.backends.cpu.get_cpu_capability()
    assert cap == {"avx512": "AVX512", "avx2": "AVX2"}.get(_backend.CPU, "DEFAULT")
    in_subfolder = os.path.basename(os.path.dirname(sx._C.__file__)) == "_avx512"
    assert in_subfolder == (_backend.CPU == "avx512")
    if os.environ.get("SNEPPX_CPU", "auto") in ("", "auto"):
        assert (_backend.CPU == "avx512") == BOTH


def test_avx2_can_be_forced():
    out = run("import sneppx_core as sx; print(sx.backends.cpu.get_cpu_capability(), sx._C.__file__)",
              SNEPPX_CPU="avx2")
    assert out.returncode == 0, out.stderr
    cap, path = out.stdout.split()
    assert cap in ("AVX2", "DEFAULT") and os.path.basename(os.path.dirname(path)) != "_avx512"


def test_unknown_setting_and_missing_avx512_raise():
    out = run("import sneppx_core", SNEPPX_CPU="sse9")
    assert out.returncode != 0 and "SNEPPX_CPU must be 'auto', 'avx2' or 'avx512', got 'sse9'" in out.stderr
    out = run("import sneppx_core", SNEPPX_CPU="avx512")
    if BOTH:
        assert out.returncode == 0, out.stderr
    else:
        assert out.returncode != 0 and "SNEPPX_CPU=avx512:" in out.stderr


def test_pickles_name_the_same_module_on_every_build():
    assert b"sneppx_core._SNEPPX_c" in pickle.dumps(sx.float32)
    for d in (sx.device("cpu"), sx.device("cuda", 1)):
        assert pickle.loads(pickle.dumps(d)) == d
    t = sx.arange(6, dtype=sx.int32).reshape(2, 3)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(t)).numpy(), t.numpy())


RESULTS = """
import sys
import numpy as np
import sneppx_core as sx
import sneppx_core.functional as F
rng = np.random.default_rng(0)
x = sx.tensor(rng.standard_normal((67, 301)).astype(np.float32) * 4)
i = sx.tensor(rng.integers(-1000, 1000, (67, 301)).astype(np.int32))
w = sx.tensor(rng.standard_normal((301, 45)).astype(np.float32))
out = {"exp": sx.exp(x), "sigmoid": sx.sigmoid(x), "tanh": sx.tanh(x), "gelu": F.gelu(x),
       "softplus": F.softplus(x), "rsqrt": x.abs().add(0.1) ** -0.5, "log": sx.log(x.abs() + 1e-3),
       "sum1": x.sum(1), "sum0": x.sum(0), "isum": i.sum(), "isum1": i.sum(1), "imax": i.amax(1),
       "softmax": F.softmax(x, -1), "mm": x @ w, "cumsum": x.cumsum(1), "sort": x.sort(1)[0],
       "randn": sx.randn(4099, dtype=sx.float64, generator=sx.Generator().manual_seed(3))}
np.savez(sys.argv[1], **{k: v.numpy() for k, v in out.items()})
"""


@pytest.mark.skipif(not BOTH, reason="needs a CPU with AVX-512 and both builds")
def test_avx2_and_avx512_builds_agree(tmp_path):
    files = {}
    for cpu in ("avx2", "avx512"):
        files[cpu] = tmp_path / f"{cpu}.npz"
        out = subprocess.run([sys.executable, "-c", RESULTS, str(files[cpu])], capture_output=True, text=True,
                             env=dict(os.environ, SNEPPX_BACKEND="c", SNEPPX_CPU=cpu), timeout=120)
        assert out.returncode == 0, out.stderr
    a, b = np.load(files["avx2"]), np.load(files["avx512"])
    for name in a.files:
        if a[name].dtype.kind in "iub" or name == "randn":  # integers (GCC 12 once vectorised an int32 sum
            # wrongly) and random draws (a seed gives the same model everywhere): exactly
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        elif name == "mm":  # AVX-512: the direct kernel (cpu/gemm_direct.cpp), AVX2: BLAS; 301-term float32
            # sums added in another order (both within 1e-4 of float64 here)
            np.testing.assert_allclose(a[name], b[name], rtol=1e-5, atol=2e-4, err_msg=name)
        else:
            np.testing.assert_allclose(a[name], b[name], rtol=2e-6, atol=1e-6, err_msg=name)
