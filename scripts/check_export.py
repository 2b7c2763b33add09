"""Loads a `tplab run --export DIR` folder with numpy alone and recomputes the block from it.

Checks (exit 1 on failure):
  - every layer's forward, recomputed in float64 from tensors.safetensors, reproduces `output`;
  - each rank's shards in shards.safetensors are the Megatron slices of the full weights
    (QKV by heads: the Q, K and V columns of the rank's heads, with grouped-query attention the
    rank's KV heads or its copy of one; out-proj and fc2 by rows; fc1 by columns; LayerNorms and
    row-parallel biases replicated).
The safetensors format is read directly (8-byte header length, JSON header, raw little-endian data),
so nothing but numpy is needed.
"""
import json
import struct
import sys

import numpy as np

DT = {"F32": np.float32, "F64": np.float64, "I64": np.int64}


def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    out = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=DT[t["dtype"]]).reshape(t["shape"])
    return out, meta


def layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b


def gelu(x):
    # A numpy float64 scalar would promote a float32 array to float64 (NumPy 2, NEP 50): keep the
    # constant in x's dtype so the benchmark's float32 block stays float32.
    c = x.dtype.type(np.sqrt(2 / np.pi))
    return 0.5 * x * (1 + np.tanh(c * (x + 0.044715 * x**3)))


def block(x, p, heads, kv, batch, seq):
    """One layer's forward of `x` [batch * seq, hidden] with the weights `p`, named as in the
    export (scripts/bench_numpy.py times it too)."""
    t, h = x.shape
    d = h // heads
    qkv = layer_norm(x, p["ln1.weight"], p["ln1.bias"]) @ p["attn.qkv.weight"] + p["attn.qkv.bias"]
    split = lambda a, n: a.reshape(batch, seq, n, d).transpose(0, 2, 1, 3)
    q = split(qkv[:, :h], heads)
    k, v = split(qkv[:, h:h + kv * d], kv), split(qkv[:, h + kv * d:], kv)
    if kv != heads:
        # Grouped-query attention: KV head j // (heads // kv) serves query head j (repeat_kv).
        k, v = (np.repeat(a, heads // kv, axis=1) for a in (k, v))
    s = q @ k.transpose(0, 1, 3, 2) * x.dtype.type(1 / np.sqrt(d))  # x's dtype, as in gelu
    s = np.where(np.triu(np.ones((seq, seq), bool), 1), -np.inf, s)
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    ctx = (s @ v).transpose(0, 2, 1, 3).reshape(t, h)
    x1 = x + ctx @ p["attn.out.weight"] + p["attn.out.bias"]
    m = gelu(layer_norm(x1, p["ln2.weight"], p["ln2.bias"]) @ p["mlp.fc1.weight"] + p["mlp.fc1.bias"])
    return x1 + m @ p["mlp.fc2.weight"] + p["mlp.fc2.bias"]


def check_vocab(path):
    """Vocabulary parallelism: each rank's rows are its slice of the padded table (padding rows
    zero), the ranks' logit columns are x @ E^T, and numpy's cross-entropy over the real
    vocabulary reproduces the loss and the embedding gradient."""
    t, meta = load(path)
    cfg = json.loads(meta["tplab.vocab_config"])
    vp, tp, h = int(meta["tplab.padded_vocab"]), cfg["tp"], cfg["hidden"]
    V, n = cfg["vocab"], int(meta["tplab.padded_vocab"]) // cfg["tp"]
    E = t["embedding"].astype(np.float64)
    ids, targets = t["ids"], t["targets"]
    padded = np.zeros((vp, h))
    padded[:V] = E
    ok = True
    for r in range(tp):
        if not np.array_equal(t[f"rank{r}.embedding"].astype(np.float64), padded[r * n:(r + 1) * n]):
            print(f"rank {r}: embedding rows are not rows {r * n}..{(r + 1) * n} of the padded table")
            ok = False
    x = E[ids]
    logits = x @ E.T
    got_logits = np.concatenate([t[f"rank{r}.logits"] for r in range(tp)], axis=1).astype(np.float64)
    z = logits - logits.max(1, keepdims=True)
    losses = np.log(np.exp(z).sum(1)) - z[np.arange(len(ids)), targets]
    loss = losses.mean()
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    p[np.arange(len(ids)), targets] -= 1
    p /= len(ids)
    grad = p.T @ x
    np.add.at(grad, ids, p @ E)
    got_grad = np.concatenate([t[f"rank{r}.grad.embedding"] for r in range(tp)]).astype(np.float64)
    eps = 1e-12 if t["embedding"].dtype == np.float64 else 1e-4
    rel = lambda a, b: np.abs(a - b).max() / max(np.abs(b).max(), 1)
    errs = {
        "logits": rel(got_logits[:, :V], logits),
        "loss": rel(t["loss"].astype(np.float64), np.array([loss])),
        "grad.embedding": rel(got_grad[:V], grad),
        "padding gradient": np.abs(got_grad[V:]).max() if vp > V else 0.0,
    }
    for k, e in errs.items():
        print(f"vocab {k}: max rel error {e:.3e} (tolerance {eps:.0e})")
        ok = ok and e <= eps
    print(f"vocab: V={V} padded to {vp}, {n} rows per rank; " + ("ok" if ok else "FAILED"))
    return ok


def main(folder):
    import os
    if os.path.exists(f"{folder}/vocab.safetensors"):
        ok = check_vocab(f"{folder}/vocab.safetensors")
        if not os.path.exists(f"{folder}/tensors.safetensors"):
            return 0 if ok else 1
        if not ok:
            return 1
    t, meta = load(f"{folder}/tensors.safetensors")
    shards, _ = load(f"{folder}/shards.safetensors")
    cfg = json.loads(meta["tplab.config"])
    h, heads, tp, f = cfg["hidden"], cfg["heads"], cfg["tp"], cfg["ffn"]
    kv = cfg.get("kv_heads") or heads
    d = h // heads
    x = t["input"].astype(np.float64)
    for i in range(cfg["layers"]):
        p = {k[len(f"layers.{i}."):]: v.astype(np.float64) for k, v in t.items() if k.startswith(f"layers.{i}.")}
        x = block(x, p, heads, kv, cfg["batch"], cfg["seq"])
    want = t["output"].astype(np.float64)
    # float64 recomputation of a float32 export: the float32 run's own rounding dominates
    # (sqrt(K)·eps32 relative, K <= ffn); float64 exports agree to ~1e-12.
    eps = 1e-12 if t["output"].dtype == np.float64 else 1e-4
    err = np.abs(x - want).max() / max(np.abs(want).max(), 1)
    ok = err <= eps
    print(f"forward recomputed from the export: max rel error {err:.3e} (tolerance {eps:.0e})")
    hr, fr = h // tp, f // tp
    for r in range(tp):
        for i in range(cfg["layers"]):
            full = lambda n: t[f"layers.{i}.{n}"]
            sh = lambda n: shards[f"rank{r}.layers.{i}.{n}"]
            # The rank's query heads, then its KV heads: kv/tp whole heads (Megatron) or, when
            # tp > kv, a copy of KV head r // (tp/kv) (vLLM's replication).
            kvp = max(kv // tp, 1)
            k0 = r // (tp // kv) if tp > kv else r * kvp
            cols = np.concatenate([
                np.arange(r * hr, (r + 1) * hr),
                np.arange(h + k0 * d, h + (k0 + kvp) * d),
                np.arange(h + (kv + k0) * d, h + (kv + k0 + kvp) * d),
            ])
            checks = {
                "attn.qkv.weight": full("attn.qkv.weight")[:, cols],
                "attn.qkv.bias": full("attn.qkv.bias")[cols],
                "attn.out.weight": full("attn.out.weight")[r * hr:(r + 1) * hr],
                "attn.out.bias": full("attn.out.bias"),
                "mlp.fc1.weight": full("mlp.fc1.weight")[:, r * fr:(r + 1) * fr],
                "mlp.fc1.bias": full("mlp.fc1.bias")[r * fr:(r + 1) * fr],
                "mlp.fc2.weight": full("mlp.fc2.weight")[r * fr:(r + 1) * fr],
                "ln1.weight": full("ln1.weight"),
            }
            for n, w in checks.items():
                if not np.array_equal(sh(n), w):
                    print(f"rank {r} layer {i}: {n} is not the Megatron slice")
                    ok = False
    print("shards are the Megatron slices of the full weights" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
