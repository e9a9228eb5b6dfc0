"""Convolutional networks in ``sneppx_nn`` against the same networks in ``torch.nn``.

Cases:

* ``cnn train step``: two blocks of [Conv2d 3x3 -> BatchNorm2d -> ReLU -> MaxPool2d(2)] (3 -> 32 -> 64
  channels) and a Linear head, cross-entropy, SGD with momentum 0.9; batch 32 of 3x32x32 images;
* ``conv2d`` and ``batch_norm2d``: one layer of the train-step network (Conv2d 32 -> 64, 3x3, padding 1
  on (32, 32, 16, 16); BatchNorm2d(32) in training mode on (32, 32, 32, 32)), forward + backward with a
  fixed output gradient;
* ``conv2d 32->3``: an image network's last layers, few output channels (fast_neural_style's 9x9 one on
  (4, 32, 72, 72) and a 3x3 one with padding 1 on (8, 32, 64, 64)), forward + backward with a fixed output
  gradient;
* ``conv_transpose2d``: a DCGAN generator's layer (ConvTranspose2d 128 -> 64, 4x4, stride 2, padding 1
  on (16, 128, 16, 16)) and a stride-1 one (64 -> 32, 3x3, padding 1 on (8, 64, 16, 16)), forward +
  backward with a fixed output gradient;
* ``pooling``: ``MaxPool2d(3, 2, 1)`` on (8, 64, 32, 32) (a ResNet stem's pool) and the global
  ``AdaptiveAvgPool2d(1)`` of a ResNet head on (32, 512, 7, 7) and on (8, 64, 16, 16), forward under
  no_grad;
* ``resnet18 forward``: a ResNet-18-shaped network (7x7/2 stem, max pool, 4 stages of 2 basic blocks
  with 64-128-256-512 channels, global average pool, 1000-way Linear) in eval mode under no_grad,
  batch 8 of 3x64x64 images.

Both libraries run in this process with 2 threads; batches of steps (at least 10 ms each) alternate
between them so that background load hits both alike. Rows report median milliseconds and ``ratio = sneppx / torch`` (lower is better).

Run: ``python benchmarks/bench_conv.py [--quick]``.
"""

from __future__ import annotations

import sys

import numpy as np
import sneppx_core as sx

import sneppx_nn as nn

try:
    from .common import interleaved, set_threads, timing_row, try_torch
except ImportError:  # run as a script
    from common import interleaved, set_threads, timing_row, try_torch

FULL = {"warmup": 3, "steps": 20}
QUICK = {"warmup": 1, "steps": 4}


def small_cnn(m):
    """The CNN of the train-step case, built from module namespace ``m`` (sneppx_nn or torch.nn)."""
    return m.Sequential(m.Conv2d(3, 32, 3, padding=1), m.BatchNorm2d(32), m.ReLU(), m.MaxPool2d(2),
                        m.Conv2d(32, 64, 3, padding=1), m.BatchNorm2d(64), m.ReLU(), m.MaxPool2d(2),
                        m.Flatten(), m.Linear(64 * 8 * 8, 10))


def resnet18(m):
    """A ResNet-18-shaped network from module namespace ``m`` (basic blocks, projection shortcuts)."""

    class Block(m.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = m.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = m.BatchNorm2d(cout)
            self.conv2 = m.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = m.BatchNorm2d(cout)
            self.relu = m.ReLU()
            self.down = None
            if stride != 1 or cin != cout:
                self.down = m.Sequential(m.Conv2d(cin, cout, 1, stride, bias=False), m.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + (x if self.down is None else self.down(x)))

    layers = [m.Conv2d(3, 64, 7, 2, 3, bias=False), m.BatchNorm2d(64), m.ReLU(), m.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [m.AdaptiveAvgPool2d(1), m.Flatten(), m.Linear(512, 1000)]
    return m.Sequential(*layers)


def _median_ms(steps: list, cfg) -> list:
    # Batches of at least 10 ms (a few calls of a short step): a single call right after the runner's settle
    # pause also times the first call's cold start (conv2d fwd+bwd: 8.7 ms alone, 4.8 ms in a batch of five).
    return interleaved(steps, repeat=cfg["steps"], min_time=0.01, warmup=cfg["warmup"])


def _train_step(model, opt, loss_fn, x, y):
    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def _layer_step(layer, lib, rng, shape):
    """Forward + backward of one layer on random input, with a fixed random output gradient."""
    x = lib.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    g = lib.tensor(rng.standard_normal(tuple(layer(x).shape)).astype(np.float32))

    def step():
        x.grad = None
        layer.zero_grad()
        layer(x).backward(g)
    return step


def run(quick: bool = False) -> list:
    """Times both cases in both libraries; rows name, sneppx, torch, ratio, unit."""
    import sneppx_optim as optim

    cfg = QUICK if quick else FULL
    torch = try_torch()
    set_threads()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 32)
    img = rng.standard_normal((8, 3, 64, 64)).astype(np.float32)
    rows = []

    ours = small_cnn(nn)
    steps = [_train_step(ours, optim.SGD(ours.parameters(), lr=0.01, momentum=0.9), nn.CrossEntropyLoss(),
                         sx.tensor(x), sx.tensor(y))]
    if torch is not None:
        theirs = small_cnn(torch.nn)
        steps.append(_train_step(theirs, torch.optim.SGD(theirs.parameters(), lr=0.01, momentum=0.9),
                                 torch.nn.CrossEntropyLoss(), torch.from_numpy(x), torch.from_numpy(y)))
    rows.append(_row("cnn train step 2x[conv3x3-bn-relu-pool] batch 32 3x32x32", _median_ms(steps, cfg)))

    for name, make, shape in (("conv2d 32->64 3x3 fwd+bwd (32, 32, 16, 16)", lambda m: m.Conv2d(32, 64, 3, padding=1),
                               (32, 32, 16, 16)),
                              ("conv2d 32->3 9x9 fwd+bwd (4, 32, 72, 72)", lambda m: m.Conv2d(32, 3, 9),
                               (4, 32, 72, 72)),
                              ("conv2d 32->3 3x3 fwd+bwd (8, 32, 64, 64)", lambda m: m.Conv2d(32, 3, 3, padding=1),
                               (8, 32, 64, 64)),
                              ("batch_norm2d train fwd+bwd (32, 32, 32, 32)", lambda m: m.BatchNorm2d(32),
                               (32, 32, 32, 32)),
                              ("conv_transpose2d 128->64 4x4/2 fwd+bwd (16, 128, 16, 16)",
                               lambda m: m.ConvTranspose2d(128, 64, 4, 2, 1), (16, 128, 16, 16)),
                              ("conv_transpose2d 64->32 3x3 fwd+bwd (8, 64, 16, 16)",
                               lambda m: m.ConvTranspose2d(64, 32, 3, padding=1), (8, 64, 16, 16))):
        steps = [_layer_step(make(nn), sx, rng, shape)]
        if torch is not None:
            steps.append(_layer_step(make(torch.nn), torch, rng, shape))
        rows.append(_row(name, _median_ms(steps, cfg)))

    pools = (("max_pool2d 3x3/2 pad 1", lambda m: m.MaxPool2d(3, 2, 1), (8, 64, 32, 32)),
             ("max_pool1d 2", lambda m: m.MaxPool1d(2), (8, 16, 100)),
             ("adaptive_avg_pool2d 1", lambda m: m.AdaptiveAvgPool2d(1), (32, 512, 7, 7)),
             ("adaptive_avg_pool2d 1", lambda m: m.AdaptiveAvgPool2d(1), (8, 64, 16, 16)))
    for name, make, shape in pools:
        a = rng.standard_normal(shape).astype(np.float32)
        steps = [_no_grad_call(make(nn), sx.tensor(a), sx.no_grad)]
        if torch is not None:
            steps.append(_no_grad_call(make(torch.nn), torch.from_numpy(a), torch.no_grad))
        rows.append(_row(f"{name} {shape}", _median_ms(steps, cfg), "us"))

    ours = resnet18(nn).eval()
    xi = sx.tensor(img)

    def fwd_ours():
        with sx.no_grad():
            ours(xi)

    steps = [fwd_ours]
    if torch is not None:
        theirs = resnet18(torch.nn).eval()
        ti = torch.from_numpy(img)

        def fwd_theirs():
            with torch.no_grad():
                theirs(ti)

        steps.append(fwd_theirs)
    rows.append(_row("resnet18 forward batch 8 3x64x64 (eval)", _median_ms(steps, cfg)))
    return rows


def _no_grad_call(layer, x, no_grad):
    """A forward call of ``layer`` on ``x`` under the library's ``no_grad``."""
    def step():
        with no_grad():
            layer(x)
    return step


def _row(name, res, unit="ms"):
    return timing_row(name, res[0], res[1] if len(res) > 1 else None, unit)


def main(argv: list) -> None:
    """Prints the rows of :func:`run` as a table."""
    rows = run(quick="--quick" in argv)
    print(f"{'benchmark':58s} {'sneppx':>9s} {'torch':>9s} {'ratio':>7s}  unit")
    for r in rows:
        torch_s = "-" if r["torch"] is None else f"{r['torch']:.2f}"
        ratio_s = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"{r['name']:58s} {r['sneppx']:9.2f} {torch_s:>9s} {ratio_s:>7s}  {r['unit']}")


if __name__ == "__main__":
    main(sys.argv[1:])
