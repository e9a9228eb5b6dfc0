"""Watching training: metrics.jsonl, TensorBoard event files and the SummaryWriter."""

import json
import math

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_optim as so
from optim_helpers import TinyModel, mse
from sneppx_optim.metrics import read_metrics


def loader(n=24, bs=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = (x @ np.array([[1.0, -2.0], [0.5, 0.0], [-1.0, 3.0]])).astype(np.float32)
    return [(sx.Tensor(x[i:i + bs]), sx.Tensor(y[i:i + bs])) for i in range(0, n, bs)]


def fit(tmp_path, steps, resume=False, **kw):
    model = TinyModel()
    opt = so.AdamW(model.parameters(), lr=0.05)
    trainer = so.Trainer(model, opt, mse, max_steps=steps, eval_every=3, checkpoint_dir=str(tmp_path / "ck"),
                         checkpoint_every=3, progress=False, **kw)
    hist = trainer.fit(loader(), loader(8), resume_from=str(tmp_path / "ck") if resume else None)
    return hist


def test_metrics_jsonl_has_one_line_per_step_with_the_history(tmp_path):
    hist = fit(tmp_path, 7)
    rows = read_metrics(str(tmp_path / "ck"))
    assert [r["step"] for r in rows] == list(range(1, 8))
    np.testing.assert_allclose([r["loss"] for r in rows], hist.loss, rtol=1e-6)
    np.testing.assert_allclose([r["lr"] for r in rows], hist.lr, rtol=1e-6)
    assert [r["step"] for r in rows if "eval_loss" in r] == hist.eval_step == [3, 6]
    for r in rows:
        assert r["grad_norm"] > 0 and r["samples_per_s"] > 0 and r["time"] >= 0
        assert "tokens_per_s" not in r  # float inputs: samples only
    # every line is valid JSON on its own (readers can tail the file while training runs)
    for line in (tmp_path / "ck" / "metrics.jsonl").read_text().splitlines():
        json.loads(line)


def test_resume_drops_lines_past_the_checkpoint(tmp_path):
    fit(tmp_path, 7)  # checkpoints at 3, 6 and 7
    (tmp_path / "ck" / "checkpoint-00000007.safetensors").unlink()  # as if the run had died after step 7's line
    hist = fit(tmp_path, 9, resume=True)
    rows = read_metrics(str(tmp_path / "ck" / "metrics.jsonl"))
    assert [r["step"] for r in rows] == list(range(1, 10))
    np.testing.assert_allclose([r["loss"] for r in rows], hist.loss, rtol=1e-6)


def test_token_inputs_report_tokens_per_second(tmp_path):
    class Bag:
        def __init__(self):
            self.w = sx.zeros(10, 1, requires_grad=True)

        def __call__(self, ids):
            return sx.functional.embedding(ids, self.w).mean(dim=1)

        def parameters(self):
            return [self.w]

        def state_dict(self):
            return {"w": self.w}

        def load_state_dict(self, sd):
            self.w.copy_(sd["w"]) if hasattr(self.w, "copy_") else None

    ids = sx.Tensor(np.arange(24, dtype=np.int64).reshape(4, 6) % 10)
    model = Bag()
    so.Trainer(model, so.SGD(model.parameters(), lr=0.1), mse, max_steps=2, checkpoint_dir=str(tmp_path),
               progress=False).fit([(ids, sx.ones(4, 1))])
    rows = read_metrics(str(tmp_path))
    assert all(math.isclose(r["tokens_per_s"] / r["samples_per_s"], 6.0, rel_tol=1e-6) for r in rows)


def scalars(folder):
    """{tag: [(step, value)]} read back from the TensorBoard event files in ``folder``."""
    from tensorboardX.proto.event_pb2 import Event

    out = {}
    for path in sorted(folder.glob("events.out.tfevents*")):
        data, i = path.read_bytes(), 0
        while i < len(data):  # TFRecord framing: u64 length, u32 crc, payload, u32 crc
            n = int.from_bytes(data[i:i + 8], "little")
            event = Event.FromString(data[i + 12:i + 12 + n])
            i += 12 + n + 4
            for v in event.summary.value:
                out.setdefault(v.tag, []).append((event.step, v.simple_value))
    return out


def test_tensorboard_event_files(tmp_path):
    pytest.importorskip("tensorboardX")
    hist = fit(tmp_path, 4, log_dir=str(tmp_path / "tb"))
    found = scalars(tmp_path / "tb")
    assert {"train/loss", "train/lr", "train/grad_norm", "train/samples_per_s", "eval/loss"} <= set(found)
    assert [s for s, _ in found["train/loss"]] == [1, 2, 3, 4]
    np.testing.assert_allclose([v for _, v in found["train/loss"]], hist.loss, rtol=1e-6)


def test_summary_writer_takes_tensors(tmp_path):
    pytest.importorskip("tensorboardX")
    from sneppx_optim.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path)) as w:
        for step in range(3):
            w.add_scalar("loss", sx.tensor(1.0 / (step + 1)), step)
            w.add_scalars("pair", {"a": step, "b": sx.tensor([2.0 * step])}, step)
            w.add_histogram("weights", sx.randn(100), step)
        assert w.log_dir == str(tmp_path) == w.get_logdir()
        with pytest.raises(ValueError, match="one value"):
            w.add_scalar("bad", sx.randn(3), 0)
    found = scalars(tmp_path)
    assert [v for _, v in found["loss"]] == pytest.approx([1.0, 0.5, 1 / 3])


def _hide(monkeypatch, *names):
    """Makes ``import <name>`` (and its submodules) fail for each of ``names``."""
    import builtins
    import sys

    real = builtins.__import__
    for mod in [m for m in sys.modules if m.split(".")[0] in names or m.endswith("_tensorboard_files")]:
        monkeypatch.delitem(sys.modules, mod)

    def fake(name, *a, **k):
        if name.split(".")[0] in names or (name == "_tensorboard_files" and "tensorboard" in names):
            raise ImportError("no")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)


def test_summary_writer_without_tensorboardx_or_tensorboard_is_one_clear_error(monkeypatch):
    from sneppx_optim import tensorboard

    _hide(monkeypatch, "tensorboardX", "tensorboard")
    with pytest.raises(ImportError, match=r"pip install 'sneppx-optim\[tensorboard\]'"):
        tensorboard.SummaryWriter("x")


def test_summary_writer_through_the_tensorboard_package(tmp_path, monkeypatch):
    """Without tensorboardX the files come from the ``tensorboard`` package; read back with TensorBoard's own
    reader: scalars, the curves of add_scalars in their folders, a histogram matching NumPy's counts, text."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from sneppx_optim import tensorboard

    _hide(monkeypatch, "tensorboardX")
    values = np.random.default_rng(0).standard_normal(1000)
    with tensorboard.SummaryWriter(str(tmp_path)) as w:
        for step in range(3):
            w.add_scalar("loss", sx.tensor(1.0 / (step + 1)), step)
            w.add_scalars("pair", {"a": step, "b": 2.0 * step}, step)
        w.add_histogram("weights", sx.tensor(values), 0)
        w.add_text("note", "hello", 0)
        with pytest.raises(NotImplementedError, match="tensorboardX"):
            w.add_hparams({"lr": 0.1}, {"acc": 0.5})
    acc = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0}).Reload()
    assert [e.value for e in acc.Scalars("loss")] == pytest.approx([1.0, 0.5, 1 / 3])
    assert [e.step for e in acc.Scalars("loss")] == [0, 1, 2]
    curve = EventAccumulator(str(tmp_path / "pair_b")).Reload()
    assert [e.value for e in curve.Scalars("pair")] == [0.0, 2.0, 4.0]
    h = acc.Histograms("weights")[0].histogram_value
    assert h.num == 1000 and h.min == pytest.approx(values.min()) and h.sum == pytest.approx(values.sum())
    assert sum(h.bucket) == 1000
    np.testing.assert_array_equal(np.histogram(values, bins=[-np.inf, *h.bucket_limit])[0], h.bucket)
    text = acc.Tensors("note/text_summary")[0].tensor_proto.string_val[0]
    assert text == b"hello"
