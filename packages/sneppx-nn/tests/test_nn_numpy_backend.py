"""A sneppx_nn model's eval-mode forward on sneppx_core's NumPy backend: a Transformer saved here is
loaded in a subprocess with SNEPPX_BACKEND=numpy and must give this process's logits (full
sequence and token by token through the KV cache)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_nn as nn

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import sneppx_core as sx
    import sneppx_nn as nn

    assert not sx._HAS_C_BACKEND
    path, ids_path, out_path = sys.argv[1:]
    model = nn.Transformer.from_checkpoint(path).eval()
    ids = sx.Tensor.from_numpy(np.load(ids_path))
    with sx.no_grad():
        full = model(ids)
        cache = model.new_cache(ids.shape[0], ids.shape[1])
        steps = [model(ids[:, t:t + 1], cache=cache) for t in range(ids.shape[1])]
    np.savez(out_path, full=full.numpy(), steps=sx.cat(steps, 1).numpy())
""")

CONFIGS = [dict(norm="layernorm", positional="learned", activation="gelu"),
           dict(norm="rmsnorm", positional="rope", activation="silu", bias=False, tie_weights=False)]


@pytest.mark.parametrize("cfg", CONFIGS, ids=["gpt", "llama-like"])
def test_transformer_eval_forward_matches(tmp_path, cfg):
    sx.manual_seed(0)
    model = nn.Transformer(61, 32, 4, 2, max_seq_len=16, dropout=0.1, **cfg).eval()
    model.save_checkpoint(str(tmp_path / "m.safetensors"))
    ids = np.random.default_rng(1).integers(0, 61, (2, 9))
    np.save(tmp_path / "ids.npy", ids)
    with sx.no_grad():
        ref = model(sx.Tensor.from_numpy(ids)).numpy()
    env = dict(os.environ, SNEPPX_BACKEND="numpy")
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "m.safetensors"), str(tmp_path / "ids.npy"),
                          str(tmp_path / "out.npz")], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    out = np.load(tmp_path / "out.npz")
    scale = np.abs(ref).max()
    assert np.abs(out["full"] - ref).max() <= 1e-5 * scale
    assert np.abs(out["steps"] - ref).max() <= 1e-5 * scale
