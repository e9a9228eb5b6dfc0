"""Complex tensors and Fourier transforms against PyTorch: one-dimensional transforms of a batch of signals
(``rfft``, ``fft`` of complex64, ``irfft``), a 2-d transform of a batch of fields (``rfft2``), a spectrogram
(``stft`` with a Hann window), a complex product, a complex matrix product, and rotary embeddings written with
``view_as_complex`` (forward and backward).
Float32 / complex64, 2 threads, both libraries interleaved in this process; rows report the median
microseconds per call and ``ratio = sneppx / torch``.

Run: ``python benchmarks/bench_complex.py [--quick]``.
"""

from __future__ import annotations

import sys

import numpy as np
import sneppx_core as sx
from common import case_rows, print_rows, set_threads, try_torch

FULL = {"warmup": 5, "repeat": 15}
QUICK = {"warmup": 2, "repeat": 3}


def _data():
    rng = np.random.default_rng(0)
    f = np.float32
    c = lambda *s: (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64)  # noqa: E731
    return {"signals": rng.standard_normal((64, 4096)).astype(f), "spectra": c(64, 2049), "z": c(64, 4096),
            "audio": rng.standard_normal((8, 16000)).astype(f), "a": c(1 << 20), "b": c(1 << 20),
            "fields": rng.standard_normal((8, 32, 64, 64)).astype(f), "m1": c(256, 256), "m2": c(256, 256),
            "q": rng.standard_normal((8, 256, 8, 64)).astype(f),
            "angles": (np.arange(256)[:, None] * 10000.0 ** (-np.arange(32) / 32)).astype(f)}


def _cases(T, data):
    """name -> a function running one call in library ``T``."""
    t = {k: T.tensor(v) for k, v in data.items()}
    window = T.hann_window(512)
    rot = T.polar(T.ones(256, 32), t["angles"]).view(1, 256, 1, 32)
    q = t["q"].clone().requires_grad_(True)

    def rope():
        q.grad = None
        y = T.view_as_real(T.view_as_complex(q.reshape(8, 256, 8, 32, 2)) * rot).flatten(3)
        y.sum().backward()

    return {
        "rfft (64, 4096) float32": lambda: T.fft.rfft(t["signals"]),
        "fft (64, 4096) complex64": lambda: T.fft.fft(t["z"]),
        "irfft (64, 2049) -> (64, 4096)": lambda: T.fft.irfft(t["spectra"]),
        "rfft2 (8, 32, 64, 64) float32": lambda: T.fft.rfft2(t["fields"]),
        "stft (8, 16000) n_fft 512 hop 128 hann": lambda: T.stft(t["audio"], 512, 128, window=window,
                                                                 return_complex=True),
        "a * b complex64 n=1048576": lambda: t["a"] * t["b"],
        "matmul (256, 256) @ (256, 256) complex64": lambda: t["m1"] @ t["m2"],
        "rotary view_as_complex (8, 256, 8, 64) fwd+bwd": rope,
    }


def run(quick: bool = False) -> list:
    """Times each case in both libraries; rows name, sneppx, torch, ratio, unit (us per call)."""
    cfg = QUICK if quick else FULL
    torch = try_torch()
    set_threads()
    data = _data()
    ours = _cases(sx, data)
    theirs = _cases(torch, data) if torch is not None else None
    return case_rows(ours, theirs, cfg)


def main(argv: list) -> None:
    """Prints the rows of :func:`run` as a table."""
    print_rows(run(quick="--quick" in argv), 56)


if __name__ == "__main__":
    main(sys.argv[1:])
