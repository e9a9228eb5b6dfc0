"""Building a model on the meta device (no memory), then giving it weights: ``load_state_dict(assign=True)``
or ``to_empty`` and a load, as PyTorch programs do (gpt-fast, torchtitan). The reference is the same model built
on the CPU."""
import numpy as np
import sneppx_core as sx

import sneppx_nn as nn


class Tiny(nn.Module):
    """Embedding, attention-free block and a head tied to the embedding."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 8)
        self.fc = nn.Linear(8, 16)
        self.norm = nn.LayerNorm(16)
        self.proj = nn.Linear(16, 8)
        self.head = nn.Linear(8, 11, bias=False)
        self.head.weight = self.emb.weight
        self.register_buffer("scale", sx.full((8,), 0.5))

    def forward(self, idx):
        h = self.emb(idx)
        h = h + self.proj(self.norm(self.fc(h)).relu()) * self.scale
        return self.head(h)


def _reference():
    sx.manual_seed(0)
    return Tiny()


def test_meta_model_then_assign():
    """Under ``with device("meta")`` every parameter and buffer is meta (even a big layer costs nothing);
    ``load_state_dict(assign=True)`` gives it the state's tensors, and it computes what the CPU model does."""
    ref = _reference()
    with sx.device("meta"):
        model = Tiny()
        huge = nn.Linear(2**16, 2**16)  # 16 GiB of float32 on the CPU
    assert all(p.is_meta for p in model.parameters()) and model.scale.is_meta and huge.weight.is_meta
    assert model.head.weight is model.emb.weight
    model.load_state_dict(ref.state_dict(), assign=True)
    assert not any(p.is_meta for p in model.parameters()) and not model.scale.is_meta
    idx = sx.tensor([[1, 4, 7], [10, 0, 3]])
    np.testing.assert_array_equal(model(idx).detach().numpy(), ref(idx).detach().numpy())


def test_to_empty_then_load():
    """``to_empty`` gives every parameter and buffer memory of its shape and dtype on the device (tied ones stay
    tied, ``requires_grad`` kept); a load then fills them."""
    ref = _reference()
    with sx.device("meta"):
        model = Tiny()
    model.fc.bias.requires_grad_(False)
    assert model.to_empty(device="cpu") is model
    assert all(p.device == "cpu" and isinstance(p, nn.Parameter) for p in model.parameters())
    assert model.head.weight is model.emb.weight and not model.fc.bias.requires_grad
    assert [(n, p.shape, p.dtype) for n, p in model.named_parameters()] == \
        [(n, p.shape, p.dtype) for n, p in ref.named_parameters()]
    model.load_state_dict(ref.state_dict())
    idx = sx.tensor([[2, 5, 9]])
    np.testing.assert_array_equal(model(idx).detach().numpy(), ref(idx).detach().numpy())


def test_meta_forward_gives_output_geometry():
    """A forward pass of a meta model computes the output's shape and dtype, and nothing else."""
    with sx.device("meta"):
        model = Tiny().to(sx.bfloat16)
        out = model(sx.zeros(4, 6, dtype=sx.int64))
    assert out.is_meta and out.shape == (4, 6, 11) and out.dtype == sx.bfloat16
