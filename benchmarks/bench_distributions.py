"""Speed of ``sneppx_core.distributions`` against ``torch.distributions``: the calls a policy-gradient, VAE,
SAC or mixture-density training step makes (a distribution built from parameters, then its ``log_prob``,
``rsample``, ``entropy`` or ``kl_divergence``, with backward where the step has one). Float32, 2 threads, both
libraries interleaved in this process, argument validation on (both libraries' default); rows report the
median microseconds per call and ``ratio = sneppx / torch``.

Run: ``python benchmarks/bench_distributions.py [--quick]``.
"""

from __future__ import annotations

import sys

import numpy as np
import sneppx_core as sx
from common import case_rows, print_rows, set_threads, try_torch

FULL = {"warmup": 20, "repeat": 15}
QUICK = {"warmup": 3, "repeat": 3}


def _cases(T, D, data):
    """name -> a function running one call in library ``T`` (its ``distributions`` module ``D``)."""
    t = {k: T.tensor(v) for k, v in data.items()}
    loc = t["loc"].clone().requires_grad_(True)
    rate = t["rate"].clone().requires_grad_(True)
    big_rate = t["big_rate"].clone().requires_grad_(True)
    conc = t["conc"].clone().requires_grad_(True)
    std_normal = D.Normal(T.zeros(64), T.ones(64))

    def squashed():
        pi = D.TransformedDistribution(D.Normal(loc[:, :6], t["scale"][:, :6]), [D.transforms.TanhTransform(1)])
        a = pi.rsample()
        pi.log_prob(a).sum().backward()

    def mixture():
        mix = D.MixtureSameFamily(D.Categorical(logits=t["mix"]),
                                  D.Independent(D.Normal(t["means"], t["stds"]), 1))
        return mix.log_prob(t["points"])

    return {
        "Normal log_prob (256, 64)": lambda: D.Normal(t["loc"], t["scale"]).log_prob(t["x"]),
        "Normal rsample + log_prob + backward (256, 64)":
            lambda: (lambda d: d.log_prob(d.rsample()).sum().backward())(D.Normal(loc, t["scale"])),
        "kl_divergence(Normal, Normal(0, 1)) (256, 64)":
            lambda: D.kl_divergence(D.Normal(t["loc"], t["scale"]), std_normal),
        "Categorical sample + log_prob + entropy (256, 10)":
            lambda: (lambda d: (d.log_prob(d.sample()), d.entropy()))(D.Categorical(logits=t["logits"])),
        "MultivariateNormal log_prob b256 d8 (scale_tril)":
            lambda: D.MultivariateNormal(t["loc"][:, :8], scale_tril=t["tril"]).log_prob(t["x"][:, :8]),
        "tanh-squashed Normal rsample + log_prob + backward (256, 6)": squashed,
        "MixtureSameFamily log_prob 256 points, 5 components, d2": mixture,
        "Dirichlet log_prob (256, 5)": lambda: D.Dirichlet(t["conc"]).log_prob(t["simplex"]),
        "Gamma rsample + backward (256,)": lambda: D.Gamma(rate, T.ones(256)).rsample().sum().backward(),
        "Gamma rsample + backward (65536,)":
            lambda: D.Gamma(big_rate, T.ones(65536)).rsample().sum().backward(),
        "Dirichlet rsample + backward (256, 5)": lambda: D.Dirichlet(conc).rsample().sum().backward(),
    }


def _data():
    rng = np.random.default_rng(0)
    f = np.float32
    simplex = rng.dirichlet(np.ones(5), 256).astype(f)
    return {"loc": rng.standard_normal((256, 64)).astype(f), "scale": rng.uniform(0.5, 2, (256, 64)).astype(f),
            "x": rng.standard_normal((256, 64)).astype(f), "logits": rng.standard_normal((256, 10)).astype(f),
            "tril": (np.tril(rng.standard_normal((8, 8)) * 0.2) + 2 * np.eye(8)).astype(f),
            "mix": rng.standard_normal(5).astype(f), "means": rng.standard_normal((5, 2)).astype(f),
            "stds": rng.uniform(0.5, 2, (5, 2)).astype(f), "points": rng.standard_normal((256, 2)).astype(f),
            "conc": rng.uniform(0.5, 3, (256, 5)).astype(f), "simplex": simplex,
            "rate": rng.uniform(0.5, 3, 256).astype(f), "big_rate": rng.uniform(0.5, 3, 65536).astype(f)}


def run(quick: bool = False) -> list:
    """Times each case in both libraries; rows name, sneppx, torch, ratio, unit (us per call)."""
    cfg = QUICK if quick else FULL
    torch = try_torch()
    set_threads()
    data = _data()
    ours = _cases(sx, sx.distributions, data)
    theirs = None
    if torch is not None:
        import torch.distributions as TD

        theirs = _cases(torch, TD, data)
    return case_rows(ours, theirs, cfg)


def main(argv: list) -> None:
    """Prints the rows of :func:`run` as a table."""
    print_rows(run(quick="--quick" in argv), 62)


if __name__ == "__main__":
    main(sys.argv[1:])
