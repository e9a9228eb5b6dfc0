"""Trainer checkpoints: contents, atomic writes, and bit-exact resuming mid-epoch."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sneppx_core as sx
from safetensors import safe_open

import sneppx_optim as so
from sneppx_optim import _atomic
from optim_helpers import TinyModel, mse, to_np
from test_optim_trainer import Loader, make_data


class NoisyModel(TinyModel):
    """TinyModel with input noise drawn from the global generator (like dropout), so RNG state matters."""

    def __call__(self, x):
        return (x + 0.1 * sx.randn(*x.shape)) @ self.w + self.b


class Interrupt(Exception):
    pass


class StopAt:
    def __init__(self, step):
        self.step = step

    def on_step_end(self, trainer, step, logs):
        if step == self.step:
            raise Interrupt


def _trainer(tmp_path, callbacks=(), **kwargs):
    model = NoisyModel()
    opt = so.AdamW(model.parameters(), lr=0.05, weight_decay=0.01)
    sched = so.CosineAnnealingLR(opt, min_lr=1e-3, max_lr=0.05, total_steps=20, warmup_steps=3)
    trainer = so.Trainer(model, opt, mse, sched, max_epochs=3, grad_clip=1.0, grad_accum_steps=2,
                         checkpoint_dir=str(tmp_path), checkpoint_every=3, seed=1234, callbacks=callbacks,
                         progress=False, **kwargs)
    return model, trainer


@pytest.mark.parametrize("stop_at", [4, 7, 8])
def test_interrupted_and_resumed_run_matches_uninterrupted(tmp_path, stop_at):
    x, y = make_data(28)  # 7 batches of 4 -> 4 steps per epoch (the last one with a single micro-batch)
    loader = Loader(x, y, 4, shuffle=True)
    full_model, full = _trainer(tmp_path / "full")
    full_hist = full.fit(loader, eval_loader=Loader(x, y, 7))

    model, trainer = _trainer(tmp_path / "cut", callbacks=[StopAt(stop_at)])
    with pytest.raises(Interrupt):
        trainer.fit(loader, eval_loader=Loader(x, y, 7))
    last = 3 * ((stop_at - 1) // 3)  # checkpoints every 3 steps, written after the step's callbacks
    assert so.latest_checkpoint(str(tmp_path / "cut")).endswith(f"checkpoint-{last:08d}.safetensors")
    model, trainer = _trainer(tmp_path / "cut")
    sx.manual_seed(999)  # whatever the RNG state before resuming, the checkpoint's state wins
    hist = trainer.fit(loader, eval_loader=Loader(x, y, 7), resume_from=str(tmp_path / "cut"))

    assert hist.as_dict() == full_hist.as_dict()
    assert full_hist.step[-1] == 12 and len(full_hist.eval_step) == 3
    for a, b in zip(model.parameters(), full_model.parameters()):
        np.testing.assert_array_equal(to_np(a), to_np(b))
    assert sx.default_generator().get_state() == full_rng_after(tmp_path / "full")


def full_rng_after(folder):
    """The RNG state stored in the final checkpoint of a finished run."""
    _, meta = so.read_checkpoint(str(folder))
    return tuple(meta["trainer"]["rng"])


def test_checkpoint_contents_and_atomic_write(tmp_path):
    x, y = make_data(16)
    model, trainer = _trainer(tmp_path)
    trainer.max_epochs = 1
    trainer.fit(Loader(x, y, 4))
    names = sorted(os.listdir(tmp_path))
    # 2 steps; the final save and the step metrics; no temporary files left
    assert names == ["checkpoint-00000002.safetensors", "metrics.jsonl"]
    path = tmp_path / names[0]
    with safe_open(str(path), framework="numpy") as f:
        keys = set(f.keys())
        meta = json.loads(f.metadata()["sneppx_optim"])
    assert {"model/w", "model/b", "optimizer/0/exp_avg", "optimizer/1/exp_avg_sq", "optimizer/0/step"} <= keys
    assert meta["trainer"]["step"] == 2 and meta["trainer"]["epoch"] == 1 and meta["scheduler"]["last_epoch"] == 2
    assert meta["versions"]["sneppx_optim"] == so.__version__
    tensors, _ = so.read_checkpoint(str(path))
    np.testing.assert_array_equal(to_np(tensors["model/w"]), to_np(model.w))
    assert to_np(tensors["optimizer/0/step"]).tolist() == 2.0  # a 0-d float32 tensor, as PyTorch's
    np.testing.assert_array_equal(to_np(tensors["optimizer/0/exp_avg"]),
                                  to_np(trainer.optimizer.state[model.w]["exp_avg"]))


def test_save_and_load_checkpoint_functions(tmp_path):
    model = TinyModel()
    opt = so.Adam(model.parameters(), lr=0.01, betas=(0.8, 0.9))
    for p in model.parameters():
        p.grad = sx.ones(p.shape)
    opt.step()
    so.save_checkpoint(str(tmp_path / "c.safetensors"), model, opt)
    other = TinyModel(seed=5)
    opt2 = so.Adam(other.parameters(), lr=0.5)
    so.load_checkpoint(str(tmp_path / "c.safetensors"), other, opt2)
    assert opt2.param_groups[0]["lr"] == 0.01 and opt2.param_groups[0]["betas"] == (0.8, 0.9)
    np.testing.assert_array_equal(to_np(other.w), to_np(model.w))
    np.testing.assert_array_equal(to_np(opt2.state[other.w]["exp_avg_sq"]), to_np(opt.state[model.w]["exp_avg_sq"]))
    with pytest.raises(FileNotFoundError):
        so.read_checkpoint(str(tmp_path / "missing.safetensors"))
    os.makedirs(tmp_path / "empty_dir")
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        so.read_checkpoint(str(tmp_path / "empty_dir"))


def _run(script: str, *args):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


_KILLED_SAVE = """
    import os, signal, sys
    sys.path.insert(0, sys.argv[2])
    import sneppx_optim as so
    from sneppx_optim import _atomic
    from optim_helpers import TinyModel

    def killed_mid_write(fd, mode):
        f = open(fd, mode)
        f.write(b"half-written")
        f.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    _atomic.os.fdopen = killed_mid_write
    model = TinyModel()
    so.save_checkpoint(sys.argv[1], model, so.SGD(model.parameters(), lr=0.1))
"""


def test_next_save_removes_temp_files_of_a_killed_save(tmp_path):
    path = tmp_path / "checkpoint-00000001.safetensors"
    done = _run(_KILLED_SAVE, path, os.path.dirname(__file__))
    assert done.returncode == -9, done.stderr[-2000:]
    left = os.listdir(tmp_path)
    assert len(left) == 1 and left[0].startswith(".checkpoint-00000001.safetensors.") and left[0].endswith(".tmp")
    live = tmp_path / f".checkpoint-00000001.safetensors.{os.getpid()}@{_atomic._HOST}.abcdefgh.tmp"
    live.write_bytes(b"a save in progress in this process")
    legacy = tmp_path / ".checkpoint-abcd1234.tmp"  # the old naming: removed once an hour old
    legacy.write_bytes(b"old")
    os.utime(legacy, (0, 0))
    model = TinyModel()
    so.save_checkpoint(str(path), model, so.SGD(model.parameters(), lr=0.1))
    assert sorted(os.listdir(tmp_path)) == sorted([path.name, live.name])


_FULL_DISK = """
    import errno, os, resource, signal, sys
    import numpy as np
    import sneppx_core as sx
    import sneppx_optim as so

    class Big:
        def __init__(self):
            self.w = sx.Tensor(np.zeros((256, 256), np.float32)).requires_grad_(True)

        def parameters(self):
            return [self.w]

        def state_dict(self):
            return {"w": self.w}

    path = sys.argv[1]
    model = Big()
    opt = so.SGD(model.parameters(), lr=0.1)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))  # writes past 64 KiB fail
    try:
        so.save_checkpoint(path, model, opt)
    except OSError as e:
        print(type(e).__name__, e.errno == errno.EFBIG, e.filename == path, path in str(e))
    print(os.listdir(os.path.dirname(path)))
"""


def test_failed_write_raises_oserror_with_the_path_and_leaves_no_temp(tmp_path):
    path = tmp_path / "checkpoint-00000001.safetensors"
    done = _run(_FULL_DISK, path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["OSError True True True", "[]"]


def test_saved_files_get_the_mode_open_gives(tmp_path):
    # mkstemp makes owner-only files; a saved checkpoint gets 0o666 less the umask, as PyTorch's does
    model = TinyModel()
    mask = os.umask(0o027)
    try:
        so.save_checkpoint(str(tmp_path / "c.safetensors"), model, so.SGD(model.parameters(), lr=0.1))
    finally:
        os.umask(mask)
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert set(modes.values()) == {0o640}, modes
