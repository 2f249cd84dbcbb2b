"""Peak RSS and wall time of one LoRA training epoch of the bundled trainer on a synthetic model with Qwen2.5-0.5B's shapes.

Usage: /usr/bin/python3 bench/trainer_memory.py [--trainer DIR] [--work DIR] [--threads N] [--type F16|Q8_0|Q4_K]

Writes (once, into --work) a qwen2 GGUF with Qwen2.5-0.5B's layer shapes (hidden 896, 24 layers, 14
heads, 2 KV heads, FFN 4864, vocabulary 151,936, tied embeddings) and random weights, stored as
--type, plus 24 examples of 41 tokens (984 tokens: 33 prompt + 8 completion each); then runs
`DIR/lora_train.py --spec` for one epoch (rank 4, attn_q attn_v attn_output ffn_down, batch 4) as a
child and prints one JSON line: the file's size, the child's peak RSS (wait4's ru_maxrss), its wall
and CPU seconds and the trainer's own seconds. --trainer picks which trainer runs (another checkout's
trainer/ folder compares two versions on the same file).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
N_EMBD, N_LAYER, N_HEAD, N_HEAD_KV, N_FF, N_VOCAB = 896, 24, 14, 2, 4864, 151936


def write_model(path, ggml_type):
    sys.path.insert(0, os.path.join(HERE, "..", "test", "platform", "engines", "fixtures"))
    sys.path.insert(0, os.path.join(HERE, "..", "packages", "platform", "trainer"))
    from gguf_file import write_gguf
    from gguf_quant import encode

    rng = np.random.default_rng(1)
    head_dim = N_EMBD // N_HEAD
    kv = {
        "general.architecture": "qwen2", "general.name": "qwen2.5-0.5b-shapes",
        "qwen2.context_length": 4096, "qwen2.embedding_length": N_EMBD, "qwen2.block_count": N_LAYER,
        "qwen2.feed_forward_length": N_FF, "qwen2.attention.head_count": N_HEAD,
        "qwen2.attention.head_count_kv": N_HEAD_KV, "qwen2.rope.freq_base": 1000000.0,
        "qwen2.attention.layer_norm_rms_epsilon": 1e-6,
    }
    tensors = {"token_embd.weight": encode(ggml_type, (N_VOCAB, N_EMBD), 0.02, rng),
               "output_norm.weight": np.ones(N_EMBD, np.float32)}
    for i in range(N_LAYER):
        p = "blk.%d." % i
        tensors[p + "attn_norm.weight"] = np.ones(N_EMBD, np.float32)
        tensors[p + "ffn_norm.weight"] = np.ones(N_EMBD, np.float32)
        for name, shape in (("attn_q", (N_EMBD, N_EMBD)), ("attn_k", (N_HEAD_KV * head_dim, N_EMBD)),
                            ("attn_v", (N_HEAD_KV * head_dim, N_EMBD)), ("attn_output", (N_EMBD, N_EMBD)),
                            ("ffn_gate", (N_FF, N_EMBD)), ("ffn_up", (N_FF, N_EMBD)), ("ffn_down", (N_EMBD, N_FF))):
            tensors[p + name + ".weight"] = encode(ggml_type, shape, shape[1] ** -0.5, rng)
        for name, rows in (("attn_q", N_EMBD), ("attn_k", N_HEAD_KV * head_dim), ("attn_v", N_HEAD_KV * head_dim)):
            tensors[p + name + ".bias"] = (rng.standard_normal(rows) * 0.02).astype(np.float32)
    write_gguf(path, kv, tensors)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trainer", default=os.path.join(HERE, "..", "packages", "platform", "trainer"))
    parser.add_argument("--work", default="/tmp/trainer-memory-bench")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--type", default="F16")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "qwen2.5-0.5b-shapes-%s.gguf" % args.type.lower())
    if not os.path.exists(model):
        write_model(model, args.type)
    rng = np.random.default_rng(2)
    tokens = os.path.join(args.work, "tokens.jsonl")
    with open(tokens, "w") as f:
        for _ in range(24):
            ids = rng.integers(0, N_VOCAB, size=41).tolist()
            f.write(json.dumps({"prompt": ids[:33], "completion": ids[33:]}) + "\n")
    spec = os.path.join(args.work, "spec.json")
    with open(spec, "w") as f:
        json.dump({"jobId": "bench", "baseModelPath": model, "tokensPath": tokens,
                   "adapterPath": os.path.join(args.work, "adapter.gguf"), "threads": args.threads, "device": "cpu",
                   "hyperparameters": {"epochs": 1}}, f)
    started = time.time()
    child = subprocess.Popen([sys.executable, os.path.join(args.trainer, "lora_train.py"), "--spec", spec],
                             stdout=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": str(args.threads)})
    out = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.time() - started
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    done = events[-1] if events else {}
    print(json.dumps({
        "trainer": os.path.abspath(args.trainer), "type": args.type, "fileMB": round(os.path.getsize(model) / 2**20),
        "peakRssMB": round(usage.ru_maxrss / 1024), "wallSeconds": round(wall, 1),
        "cpuSeconds": round(usage.ru_utime + usage.ru_stime, 1),
        "trainerSeconds": done.get("metrics", {}).get("seconds"), "outcome": done.get("type"),
        "message": done.get("message"), "exit": os.waitstatus_to_exitcode(status),
        "loadAverage": round(os.getloadavg()[0], 1),
    }))


if __name__ == "__main__":
    main()
