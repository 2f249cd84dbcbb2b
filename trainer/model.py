"""A Llama-architecture decoder (llama, qwen2) built in torch from a GGUF file, as llama.cpp computes it, with LoRA."""

import math

import numpy as np
import torch
import torch.nn.functional as F

from gguf import GgufError

# llama.cpp's RoPE type per architecture: "norm" rotates adjacent pairs (its llama converter permutes
# Q/K for that), "neox" rotates dimension i with i + n_rot/2.
ROPE_MODE = {"llama": "norm", "qwen2": "neox"}
LINEAR_NAMES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


# Frozen matrices are multiplied a slice of rows at a time, each slice widened to float32 into one
# reused buffer: no float32 copy of a whole matrix exists (the output layer of a 150k-token
# vocabulary is 0.5 GB in float32), and no slice-sized block is allocated and freed per product
# (freed blocks of that size stay in the C heap and grow the resident set by as much again).
_SLICE_VALUES = 1 << 23
_scratch = {}


def _row_slices(weight):
    rows = max(1, _SLICE_VALUES // max(1, weight.shape[1]))
    return [(r, min(r + rows, weight.shape[0])) for r in range(0, weight.shape[0], rows)]


def _widened(weight, r0, r1, dtype):
    """Rows r0:r1 of `weight` as `dtype`, in the shared scratch buffer: valid until the next call."""
    key = (weight.device, dtype)
    need = (r1 - r0) * weight.shape[1]
    buf = _scratch.get(key)
    if buf is None or buf.numel() < need:
        buf = _scratch[key] = torch.empty(max(need, _SLICE_VALUES), dtype=dtype, device=weight.device)
    out = buf[:need].view(r1 - r0, weight.shape[1])
    out.copy_(weight[r0:r1])
    return out


class _FrozenLinear(torch.autograd.Function):
    """x W^T + b for a frozen 16-bit W, computed in x's dtype (float32). Autograd keeps the 16-bit W
    only, and widens it again a slice at a time for the input's gradient; W and b get none. (The
    scratch buffer is safe to share: forward and backward products run one at a time.)"""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(weight)
        if weight.dtype == x.dtype:
            return F.linear(x, weight, bias)
        out = x.new_empty(x.shape[:-1] + (weight.shape[0],))
        for r0, r1 in _row_slices(weight):
            out[..., r0:r1] = F.linear(x, _widened(weight, r0, r1, x.dtype), None if bias is None else bias[r0:r1])
        return out

    @staticmethod
    def backward(ctx, grad):
        (weight,) = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None, None, None
        if weight.dtype == grad.dtype:
            return grad.matmul(weight), None, None
        flat = grad.reshape(-1, grad.shape[-1])
        gx = flat.new_zeros(flat.shape[0], weight.shape[1])
        for r0, r1 in _row_slices(weight):
            gx.addmm_(flat[:, r0:r1], _widened(weight, r0, r1, grad.dtype))
        return gx.reshape(grad.shape[:-1] + (weight.shape[1],)), None, None


class LoraLinear(torch.nn.Module):
    """y = x W^T + b + (alpha / rank) * (x A^T) B^T; W (16-bit) and b frozen, A and B trained in float32."""

    def __init__(self, weight, bias=None):
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)
        self.bias = None if bias is None else torch.nn.Parameter(bias, requires_grad=False)
        self.lora_a = None
        self.lora_b = None
        self.scale = 0.0

    def add_lora(self, rank, alpha, generator, device="cpu"):
        out_features, in_features = self.weight.shape
        a = torch.empty(rank, in_features)
        bound = 1.0 / math.sqrt(in_features)
        # Drawn on the CPU generator whatever the device: the same seed gives the same adapter.
        a.uniform_(-bound, bound, generator=generator)
        self.lora_a = torch.nn.Parameter(a.to(device))
        self.lora_b = torch.nn.Parameter(torch.zeros(out_features, rank, device=device))
        self.scale = alpha / rank

    def set_lora(self, a, b, alpha):
        self.lora_a = torch.nn.Parameter(a, requires_grad=False)
        self.lora_b = torch.nn.Parameter(b, requires_grad=False)
        self.scale = alpha / a.shape[0] if alpha else 1.0

    def forward(self, x):
        y = _FrozenLinear.apply(x, self.weight, self.bias)
        if self.lora_a is not None:
            y = y + self.scale * F.linear(F.linear(x, self.lora_a), self.lora_b)
        return y


def frozen_matrix(gguf, name):
    """A weight matrix as torch keeps it frozen: float16, or bfloat16 for a BF16 tensor (or one
    beyond float16's range); never wider than 16 bits, whatever the file stores."""
    kind, array = gguf.tensor16(name)
    if kind == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


class LlamaModel(torch.nn.Module):
    def __init__(self, gguf):
        super().__init__()
        arch = gguf.get("general.architecture")
        if arch not in ROPE_MODE:
            raise GgufError(
                "the model's architecture is %r; the trainer supports %s" % (arch, ", ".join(sorted(ROPE_MODE))))
        self.arch = arch

        def meta(key, default=None):
            value = gguf.get("%s.%s" % (arch, key), default)
            if value is None:
                raise GgufError("the model has no %s.%s metadata" % (arch, key))
            return value

        self.n_embd = int(meta("embedding_length"))
        self.n_layer = int(meta("block_count"))
        self.n_head = int(meta("attention.head_count"))
        n_head_kv = meta("attention.head_count_kv", self.n_head)
        if isinstance(n_head_kv, np.ndarray):
            raise GgufError("per-layer KV head counts are not supported")
        self.n_head_kv = int(n_head_kv)
        self.head_dim = int(meta("attention.key_length", self.n_embd // self.n_head))
        self.eps = float(meta("attention.layer_norm_rms_epsilon", 1e-5))
        self.n_rot = int(meta("rope.dimension_count", self.head_dim))
        self.rope_base = float(meta("rope.freq_base", 10000.0))
        scaling_type = gguf.get("%s.rope.scaling.type" % arch, "none")
        factor = float(gguf.get("%s.rope.scaling.factor" % arch, 0.0) or 0.0)
        if scaling_type not in ("none", "linear") and factor not in (0.0, 1.0):
            raise GgufError("RoPE scaling %r is not supported" % scaling_type)
        self.freq_scale = 1.0 / factor if scaling_type == "linear" and factor > 0 else 1.0
        self.rope_mode = ROPE_MODE[arch]

        def t(name):
            return torch.from_numpy(gguf.tensor(name))

        def opt(name):
            return t(name) if name in gguf.tensors else None

        def w(name):
            return frozen_matrix(gguf, name)

        self.tok_embd = torch.nn.Parameter(w("token_embd.weight"), requires_grad=False)
        out = w("output.weight") if "output.weight" in gguf.tensors else None
        self.output = LoraLinear(out if out is not None else self.tok_embd.data)
        self.output_norm = torch.nn.Parameter(t("output_norm.weight"), requires_grad=False)
        freqs = opt("rope_freqs.weight")
        self.layers = torch.nn.ModuleList()
        for i in range(self.n_layer):
            layer = torch.nn.Module()
            layer.attn_norm = torch.nn.Parameter(t("blk.%d.attn_norm.weight" % i), requires_grad=False)
            layer.ffn_norm = torch.nn.Parameter(t("blk.%d.ffn_norm.weight" % i), requires_grad=False)
            for name in LINEAR_NAMES:
                setattr(layer, name, LoraLinear(w("blk.%d.%s.weight" % (i, name)), opt("blk.%d.%s.bias" % (i, name))))
            self.layers.append(layer)

        half = self.n_rot // 2
        inv_freq = self.rope_base ** (-torch.arange(0, half, dtype=torch.float64) * 2.0 / self.n_rot)
        if freqs is not None:
            inv_freq = inv_freq / freqs.to(torch.float64)[:half]
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def linears(self):
        """(GGUF tensor name without `.weight`, module) for every linear layer in a block."""
        for i, layer in enumerate(self.layers):
            for name in LINEAR_NAMES:
                yield "blk.%d.%s" % (i, name), name, getattr(layer, name)

    def _rope(self, x, positions):
        # x: (batch, seq, heads, head_dim)
        angles = (positions.to(torch.float64)[:, None] * self.freq_scale) * self.inv_freq[None, :]
        cos = torch.cos(angles).to(x.dtype)[None, :, None, :]
        sin = torch.sin(angles).to(x.dtype)[None, :, None, :]
        rot, rest = x[..., :self.n_rot], x[..., self.n_rot:]
        if self.rope_mode == "norm":
            x0, x1 = rot[..., 0::2], rot[..., 1::2]
            r0 = x0 * cos - x1 * sin
            r1 = x0 * sin + x1 * cos
            rotated = torch.stack((r0, r1), dim=-1).flatten(-2)
        else:
            half = self.n_rot // 2
            x0, x1 = rot[..., :half], rot[..., half:]
            rotated = torch.cat((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)
        return torch.cat((rotated, rest), dim=-1)

    def forward(self, tokens, only=None):
        """Logits (batch, seq, vocab) for token ids (batch, seq); causal, positions from 0. With `only`
        (a bool mask (batch, seq)), the logits of those positions only, (count, vocab): the output
        layer, the largest matrix, then costs what the trained positions need."""
        batch, seq = tokens.shape
        device = tokens.device
        positions = torch.arange(seq, device=device)
        mask = torch.full((seq, seq), float("-inf"), device=device).triu(1)
        x = self.tok_embd[tokens].float()
        rep = self.n_head // self.n_head_kv
        for layer in self.layers:
            h = _rms_norm(x, layer.attn_norm, self.eps)
            q = layer.attn_q(h).view(batch, seq, self.n_head, self.head_dim)
            k = layer.attn_k(h).view(batch, seq, self.n_head_kv, self.head_dim)
            v = layer.attn_v(h).view(batch, seq, self.n_head_kv, -1)
            q = self._rope(q, positions)
            k = self._rope(k, positions)
            if rep > 1:
                k = k.repeat_interleave(rep, dim=2)
                v = v.repeat_interleave(rep, dim=2)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + mask
            att = torch.matmul(torch.softmax(scores, dim=-1), v)
            x = x + layer.attn_output(att.transpose(1, 2).reshape(batch, seq, -1))
            h = _rms_norm(x, layer.ffn_norm, self.eps)
            x = x + layer.ffn_down(F.silu(layer.ffn_gate(h)) * layer.ffn_up(h))
        if only is not None:
            x = x[only]
        return self.output(_rms_norm(x, self.output_norm, self.eps))

    @torch.no_grad()
    def greedy(self, tokens, max_tokens, eos=None, probs=None):
        """Greedy continuation token ids; with a `probs` list, each step's next-token distribution is appended to it."""
        ids = list(tokens)
        out = []
        for _ in range(max_tokens):
            logits = self.forward(torch.tensor([ids], device=self.tok_embd.device))[0, -1]
            if probs is not None:
                probs.append(torch.softmax(logits.double(), dim=-1).cpu().numpy())
            nxt = int(torch.argmax(logits))
            if eos is not None and nxt == eos:
                break
            ids.append(nxt)
            out.append(nxt)
        return out
