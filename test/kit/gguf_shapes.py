"""Writes a random-weight qwen2 GGUF with a real model's layer shapes (default Qwen2.5-0.5B's), f16.

Usage: gguf_shapes.py STORIES_GGUF OUT_PATH [JSON_SHAPE]
The tokenizer is stories260K's (SentencePiece, 512 entries), padded with unused entries to the shape's
vocabulary, as Qwen pads its own. The padding rows of the tied embedding are zero, so greedy decoding
never picks them (their logit is 0, below the best real token's) while every step still computes the
full vocabulary's logits, as the real model does. For speed and memory measurements, not for quality.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "packages", "platform", "trainer"))
from gguf_file import GgufFile, write_gguf  # noqa: E402

# Qwen2.5-0.5B: hidden 896, 24 layers, 14 heads (head dim 64), 2 KV heads, FFN 4864, vocabulary 151,936.
QWEN25_05B = {"n_embd": 896, "n_layer": 24, "n_head": 14, "n_head_kv": 2, "n_ff": 4864, "n_vocab": 151936,
              "context": 32768, "rope_base": 1000000.0}
UNUSED = 5  # llama.cpp's token type for an entry no text maps to


def main():
    source, out = sys.argv[1:3]
    shape = dict(QWEN25_05B, **(json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}))
    kv, types, tensors = build(GgufFile(source), shape)
    write_gguf(out, kv, tensors, types)
    print(json.dumps({"path": out, "parameters": int(sum(t.size for t in tensors.values()))}))


def build(stories, s):
    rng = np.random.default_rng(2024)
    n_embd, n_head, n_head_kv, n_ff, n_vocab = s["n_embd"], s["n_head"], s["n_head_kv"], s["n_ff"], s["n_vocab"]
    head_dim = n_embd // n_head
    kv = {"general.architecture": "qwen2", "general.name": "random-weight qwen2 %dx%d" % (s["n_layer"], n_embd)}
    types = {}
    for key, value in stories.kv.items():
        if key.startswith("tokenizer."):
            kv[key] = value
            types[key] = stories.kv_types[key]
    real = len(kv["tokenizer.ggml.tokens"])
    if n_vocab < real:
        raise SystemExit("the vocabulary must hold the tokenizer's %d entries" % real)
    pad = n_vocab - real
    kv["tokenizer.ggml.tokens"] = list(kv["tokenizer.ggml.tokens"]) + ["[PAD%d]" % i for i in range(real, n_vocab)]
    kv["tokenizer.ggml.scores"] = np.concatenate([kv["tokenizer.ggml.scores"], np.full(pad, -1e9, np.float32)])
    token_type = kv["tokenizer.ggml.token_type"]
    kv["tokenizer.ggml.token_type"] = np.concatenate([token_type, np.full(pad, UNUSED, token_type.dtype)])
    for key, value in {
        "context_length": s["context"], "embedding_length": n_embd, "block_count": s["n_layer"],
        "feed_forward_length": n_ff, "attention.head_count": n_head, "attention.head_count_kv": n_head_kv,
        "attention.layer_norm_rms_epsilon": 1e-6, "rope.freq_base": s["rope_base"],
    }.items():
        kv["qwen2.%s" % key] = value

    def mat(rows, cols, gain=1.0):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * (gain / np.sqrt(cols))).astype(np.float16)

    def vec(n, mean, std):
        return (mean + std * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    embd = np.zeros((n_vocab, n_embd), np.float16)
    embd[:real] = (rng.standard_normal((real, n_embd), dtype=np.float32) * 0.3).astype(np.float16)
    t = {"token_embd.weight": embd, "output_norm.weight": vec(n_embd, 1.0, 0.2)}
    q_rows, kv_rows = n_head * head_dim, n_head_kv * head_dim
    for i in range(s["n_layer"]):
        b = "blk.%d." % i
        t[b + "attn_norm.weight"] = vec(n_embd, 1.0, 0.2)
        t[b + "ffn_norm.weight"] = vec(n_embd, 1.0, 0.2)
        t[b + "attn_q.weight"] = mat(q_rows, n_embd, 2.0)
        t[b + "attn_q.bias"] = vec(q_rows, 0.0, 0.3)
        t[b + "attn_k.weight"] = mat(kv_rows, n_embd, 2.0)
        t[b + "attn_k.bias"] = vec(kv_rows, 0.0, 0.3)
        t[b + "attn_v.weight"] = mat(kv_rows, n_embd)
        t[b + "attn_v.bias"] = vec(kv_rows, 0.0, 0.3)
        t[b + "attn_output.weight"] = mat(n_embd, q_rows, 0.5)
        t[b + "ffn_gate.weight"] = mat(n_ff, n_embd, 1.5)
        t[b + "ffn_up.weight"] = mat(n_ff, n_embd, 1.5)
        t[b + "ffn_down.weight"] = mat(n_embd, n_ff, 0.5)
    return kv, types, t


if __name__ == "__main__":
    main()
