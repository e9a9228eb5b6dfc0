"""Model folders in the Hugging Face layout for the loader tests.

``write_safetensors`` writes the format by hand (8-byte header length, JSON header, raw bytes), so
the tests that use it need neither ``safetensors`` nor ``transformers``. ``tiny_hf_model`` builds a
random model with ``transformers`` from a small config and saves it with ``save_pretrained``.
"""

import json
import struct

import numpy as np

_CODES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64"}


def write_safetensors(path, arrays: dict, metadata=None, bf16=()):
    """Writes ``arrays`` (name -> NumPy array) as a safetensors file; names in ``bf16`` are float32
    arrays stored as BF16 (their low 16 bits dropped, so pass bf16-representable values)."""
    header, blobs, offset = {}, [], 0
    for name, a in arrays.items():
        if name in bf16:
            raw, code = (np.ascontiguousarray(a, np.float32).view(np.uint32) >> 16).astype("<u2").tobytes(), "BF16"
        else:
            raw, code = np.ascontiguousarray(a).tobytes(), _CODES[a.dtype]
        header[name] = {"dtype": code, "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def random_gpt2(folder, vocab=61, d=16, heads=2, layers=2, positions=48, seed=0, **extra):
    """A random GPT-2 folder (config.json + model.safetensors) written without transformers; returns
    the config dict and the arrays."""
    rng = np.random.default_rng(seed)
    r = lambda *s: (rng.normal(size=s) * 0.3).astype(np.float32)  # noqa: E731
    arrays = {"wte.weight": r(vocab, d), "wpe.weight": r(positions, d), "ln_f.weight": 1 + r(d), "ln_f.bias": r(d)}
    for i in range(layers):
        p = f"h.{i}."
        arrays.update({p + "ln_1.weight": 1 + r(d), p + "ln_1.bias": r(d), p + "ln_2.weight": 1 + r(d),
                       p + "ln_2.bias": r(d), p + "attn.c_attn.weight": r(d, 3 * d), p + "attn.c_attn.bias": r(3 * d),
                       p + "attn.c_proj.weight": r(d, d), p + "attn.c_proj.bias": r(d),
                       p + "mlp.c_fc.weight": r(d, 4 * d), p + "mlp.c_fc.bias": r(4 * d),
                       p + "mlp.c_proj.weight": r(4 * d, d), p + "mlp.c_proj.bias": r(d)})
    cfg = {"model_type": "gpt2", "n_embd": d, "n_head": heads, "n_layer": layers, "n_positions": positions,
           "vocab_size": vocab, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", **extra}
    (folder / "config.json").write_text(json.dumps(cfg))
    write_safetensors(folder / "model.safetensors", arrays)
    return cfg, arrays


def gpt2_reference(arrays, cfg, ids):
    """GPT-2 forward pass in float64 NumPy (the formulas, written independently of the loader)."""
    a = {k: v.astype(np.float64) for k, v in arrays.items()}
    d, h = cfg["n_embd"], cfg["n_head"]

    def ln(x, w, b):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + cfg["layer_norm_epsilon"]) * w + b

    def gelu(x):
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))

    t = ids.shape[1]
    x = a["wte.weight"][ids] + a["wpe.weight"][:t]
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        qkv = ln(x, a[p + "ln_1.weight"], a[p + "ln_1.bias"]) @ a[p + "attn.c_attn.weight"] + a[p + "attn.c_attn.bias"]
        q, k, v = (m.reshape(ids.shape[0], t, h, d // h).transpose(0, 2, 1, 3) for m in np.split(qkv, 3, -1))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // h) + np.triu(np.full((t, t), -np.inf), 1)
        p_att = np.exp(s - s.max(-1, keepdims=True))
        o = (p_att / p_att.sum(-1, keepdims=True)) @ v
        o = o.transpose(0, 2, 1, 3).reshape(ids.shape[0], t, d)
        x = x + o @ a[p + "attn.c_proj.weight"] + a[p + "attn.c_proj.bias"]
        m = gelu(ln(x, a[p + "ln_2.weight"], a[p + "ln_2.bias"]) @ a[p + "mlp.c_fc.weight"] + a[p + "mlp.c_fc.bias"])
        x = x + m @ a[p + "mlp.c_proj.weight"] + a[p + "mlp.c_proj.bias"]
    return ln(x, a["ln_f.weight"], a["ln_f.bias"]) @ a["wte.weight"].T


HF_CONFIGS = {
    "gpt2": ("GPT2Config", dict(n_embd=32, n_head=4, n_layer=2, n_positions=96)),
    "llama": ("LlamaConfig", dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=48,
                                  num_hidden_layers=2, max_position_embeddings=96, rope_theta=500000.0,
                                  rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                "high_freq_factor": 4.0, "original_max_position_embeddings": 16})),
    "llama_tied": ("LlamaConfig", dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
                                       intermediate_size=48, num_hidden_layers=2, max_position_embeddings=96,
                                       tie_word_embeddings=True)),
    "mistral": ("MistralConfig", dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=1,
                                      intermediate_size=48, num_hidden_layers=2, max_position_embeddings=96,
                                      sliding_window=12)),
    "qwen2": ("Qwen2Config", dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=48,
                                  num_hidden_layers=2, max_position_embeddings=96)),
    "qwen3": ("Qwen3Config", dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                  intermediate_size=48, num_hidden_layers=2, max_position_embeddings=96)),
}


def tiny_hf_model(name, folder, vocab=89, torch_dtype=None, init=0.2, **save_kwargs):
    """A random ``transformers`` causal LM of family ``name`` (see HF_CONFIGS) saved to ``folder``;
    returns the model (float32, eval mode, with the saved weights)."""
    import torch
    import transformers

    cls_name, kw = HF_CONFIGS[name]
    cfg = getattr(transformers, cls_name)(vocab_size=vocab, initializer_range=init, bos_token_id=1, eos_token_id=2,
                                          pad_token_id=0, **kw)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    with torch.no_grad():  # norms away from 1, so their weights matter
        for n, p in model.named_parameters():
            if "norm" in n or "ln_" in n:
                p.add_(torch.randn_like(p) * 0.2)
    if torch_dtype is not None:
        model = model.to(torch_dtype)
    model.save_pretrained(folder, **save_kwargs)
    return model
