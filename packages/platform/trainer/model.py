"""Decoder-only models (llama, qwen2, qwen3, gemma2, gemma3, phi3) built in torch from a GGUF file, as llama.cpp computes them, with LoRA."""

from __future__ import annotations

import math
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from gguf_file import GgufError, GgufFile

# What differs between the architectures, as llama.cpp's graphs compute them (src/models/*.cpp):
#   rope       llama.cpp's RoPE type: "norm" rotates adjacent pairs (its llama converter permutes
#              Q/K rows for that), "neox" rotates dimension i with i + n_rot/2.
#   qk_norm    per-head RMSNorm of Q and K (attn_q_norm / attn_k_norm) before RoPE.
#   gemma      the Gemma block: embeddings times sqrt(n_embd), GELU(tanh)-gated FFN, RMSNorm of the
#              attention and FFN outputs (post_attention_norm / post_ffw_norm) before each residual
#              add, Q scaled before attention (1/sqrt(n_embd/n_head) on the 27B layer counts, else
#              1/sqrt(head_dim): llama.cpp does not read query_pre_attn_scalar), the output tied
#              to the embeddings in gemma2.
#   fused      phi3: one attn_qkv matrix (rows Q, K, V) and an ffn_up holding gate then up.
#   swa        sliding-window layers: (pattern, default window). Layer i is local when
#              i % pattern < pattern - 1 (gemma2: even layers; gemma3: all but every 6th). A local
#              layer attends to the last `window` positions only; the mask is built exactly, so a
#              sequence longer than the window trains as llama.cpp infers it.
ARCHS: Dict[str, Dict[str, Any]] = {
    "llama": {"rope": "norm"},
    "qwen2": {"rope": "neox"},
    "qwen3": {"rope": "neox", "qk_norm": True},
    "gemma2": {"rope": "neox", "gemma": True, "swa": (2, 4096), "attn_softcap": 50.0, "final_softcap": 30.0,
               "tied_output": True, "layers_27b": 46},
    "gemma3": {"rope": "neox", "gemma": True, "qk_norm": True, "swa": (6, None), "layers_27b": 62},
    "phi3": {"rope": "neox", "fused": True},
}
SUPPORTED_ARCHITECTURES = tuple(sorted(ARCHS))

_SPLIT_LINEARS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
_FUSED_LINEARS = ("attn_qkv", "attn_output", "ffn_up", "ffn_down")
# A target named for the split layout, in an architecture that fuses it: the fused tensor holds it.
_FUSED_TARGET = {"attn_q": "attn_qkv", "attn_k": "attn_qkv", "attn_v": "attn_qkv", "ffn_gate": "ffn_up"}

# TRAINER_ATTENTION: "sdpa" (torch's fused kernel, torch >= 2.0), "manual" (matmul + softmax), or
# unset: sdpa where torch has it. Both compute the same attention; the manual path is what torch
# 1.13 (Debian's) runs, and what soft-capped attention (gemma2) always runs.
HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def linear_names(arch: str) -> Tuple[str, ...]:
    """The linear layers of one block of `arch`, in GGUF names."""
    return _FUSED_LINEARS if ARCHS[arch].get("fused") else _SPLIT_LINEARS


def resolve_targets(arch: str, targets: Sequence[str]) -> List[str]:
    """The GGUF linear names that carry LoRA for the requested `targets` (split or fused names);
    raises ValueError naming the unknown ones and the architecture's choices."""
    names = linear_names(arch)
    fused = ARCHS[arch].get("fused")
    unknown = [t for t in targets if t not in names and not (fused and t in _FUSED_TARGET)]
    if unknown:
        raise ValueError("unknown target module(s) %s; choose from %s" % (", ".join(unknown), ", ".join(names)))
    out = []
    for t in targets:
        name = _FUSED_TARGET.get(t, t) if fused else t
        if name not in out:
            out.append(name)
    return out


def attention_mode() -> str:
    """"sdpa" or "manual", as TRAINER_ATTENTION asks (default: sdpa where torch has it); raises GgufError otherwise."""
    wanted = os.environ.get("TRAINER_ATTENTION", "") or ("sdpa" if HAS_SDPA else "manual")
    if wanted not in ("sdpa", "manual"):
        raise GgufError("TRAINER_ATTENTION must be sdpa or manual, got %r" % wanted)
    if wanted == "sdpa" and not HAS_SDPA:
        raise GgufError("TRAINER_ATTENTION=sdpa, but torch %s has no scaled_dot_product_attention (torch 2.0 or later has)"
                        % torch.__version__)
    return wanted


# Frozen matrices are multiplied a slice of rows at a time, each slice widened to float32 into one
# reused buffer: no float32 copy of a whole matrix exists (the output layer of a 150k-token
# vocabulary is 0.5 GB in float32), and no slice-sized block is allocated and freed per product
# (freed blocks of that size stay in the C heap and grow the resident set by as much again).
_SLICE_VALUES = 1 << 23
_scratch: Dict[Tuple[torch.device, torch.dtype], torch.Tensor] = {}


def _row_slices(weight: torch.Tensor) -> List[Tuple[int, int]]:
    rows = max(1, _SLICE_VALUES // max(1, weight.shape[1]))
    return [(r, min(r + rows, weight.shape[0])) for r in range(0, weight.shape[0], rows)]


def _widened(weight: torch.Tensor, r0: int, r1: int, dtype: torch.dtype) -> torch.Tensor:
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
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
        ctx.save_for_backward(weight)
        if weight.dtype == x.dtype:
            return F.linear(x, weight, bias)
        out = x.new_empty(x.shape[:-1] + (weight.shape[0],))
        for r0, r1 in _row_slices(weight):
            out[..., r0:r1] = F.linear(x, _widened(weight, r0, r1, x.dtype), None if bias is None else bias[r0:r1])
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None, None]:
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

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)
        self.bias = None if bias is None else torch.nn.Parameter(bias, requires_grad=False)
        self.lora_a: Optional[torch.nn.Parameter] = None
        self.lora_b: Optional[torch.nn.Parameter] = None
        self.scale = 0.0

    def add_lora(self, rank: int, alpha: float, generator: torch.Generator, device: str = "cpu") -> None:
        out_features, in_features = self.weight.shape
        a = torch.empty(rank, in_features)
        bound = 1.0 / math.sqrt(in_features)
        # Drawn on the CPU generator whatever the device: the same seed gives the same adapter.
        a.uniform_(-bound, bound, generator=generator)
        self.lora_a = torch.nn.Parameter(a.to(device))
        self.lora_b = torch.nn.Parameter(torch.zeros(out_features, rank, device=device))
        self.scale = alpha / rank

    def set_lora(self, a: torch.Tensor, b: torch.Tensor, alpha: float) -> None:
        self.lora_a = torch.nn.Parameter(a, requires_grad=False)
        self.lora_b = torch.nn.Parameter(b, requires_grad=False)
        self.scale = alpha / a.shape[0] if alpha else 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = _FrozenLinear.apply(x, self.weight, self.bias)
        if self.lora_a is not None:
            y = y + self.scale * F.linear(F.linear(x, self.lora_a), self.lora_b)
        return y


def frozen_matrix(gguf: GgufFile, name: str) -> torch.Tensor:
    """A weight matrix as torch keeps it frozen: float16, or bfloat16 for a BF16 tensor (or one
    beyond float16's range); never wider than 16 bits, whatever the file stores."""
    kind, array = gguf.tensor16(name)
    if kind == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, softcap: float, mask: torch.Tensor,
            mode: str) -> torch.Tensor:
    """Softmax attention of q (batch, heads, seq, dim) over k, v; `mask` is additive (seq, seq)."""
    if mode == "sdpa" and not softcap:
        # The kernel scales by 1/sqrt(dim): q carries the rest of the architecture's scale.
        correction = scale * math.sqrt(q.shape[-1])
        if correction != 1.0:
            q = q * correction
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if softcap:
        scores = torch.tanh(scores / softcap) * softcap
    return torch.matmul(torch.softmax(scores + mask, dim=-1), v)


class LlamaModel(torch.nn.Module):
    """One of `ARCHS` (the name is historical): forward() gives the logits llama.cpp gives."""

    def __init__(self, gguf: GgufFile) -> None:
        super().__init__()
        arch = gguf.get("general.architecture")
        if arch not in ARCHS:
            raise GgufError(
                "the model's architecture is %r; the trainer supports %s" % (arch, ", ".join(SUPPORTED_ARCHITECTURES)))
        self.arch = arch
        spec = ARCHS[arch]
        self.spec = spec

        def meta(key: str, default: Any = None) -> Any:
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
        self.rope_mode = spec["rope"]
        if any(name.startswith("rope_factors_") or ".rope_factors_" in name for name in gguf.tensors):
            # LongRoPE (Phi-3 128k): llama.cpp picks the long or short factors by the context size
            # it is run with, so no one adapter fits both.
            raise GgufError("the model uses LongRoPE frequency factors (a 128k-context variant); the trainer does not")

        # Sliding-window layers and their RoPE (gemma3's local layers: base 10000 or rope.freq_base_swa, no scaling).
        self.window = None
        self.local = [False] * self.n_layer
        if "swa" in spec:
            pattern, default_window = spec["swa"]
            window = gguf.get("%s.attention.sliding_window" % arch, default_window)
            if window:
                self.window = int(window)
                self.local = [i % pattern < pattern - 1 for i in range(self.n_layer)]
        local_base = float(gguf.get("%s.rope.freq_base_swa" % arch, 10000.0)) if arch == "gemma3" else self.rope_base
        self.layer_rope = [(local_base, 1.0) if arch == "gemma3" and self.local[i] else (self.rope_base, self.freq_scale)
                           for i in range(self.n_layer)]

        self.q_scale = 1.0 / math.sqrt(self.head_dim)
        if spec.get("gemma") and self.n_layer == spec["layers_27b"]:
            self.q_scale = 1.0 / math.sqrt(self.n_embd // self.n_head)
        self.attn_softcap = float(gguf.get("%s.attn_logit_softcapping" % arch, spec.get("attn_softcap", 0.0)) or 0.0) \
            if "attn_softcap" in spec else 0.0
        if "final_softcap" in spec:
            self.final_softcap = float(gguf.get("%s.final_logit_softcapping" % arch, spec["final_softcap"]) or 0.0)
        elif arch == "gemma3" and self.window is None:
            # gemma3 without sliding windows (llama.cpp's non-iSWA graph) caps the logits when the file says so.
            self.final_softcap = float(gguf.get("%s.final_logit_softcapping" % arch, 0.0) or 0.0)
        else:
            self.final_softcap = 0.0
        self.embed_scale = math.sqrt(self.n_embd) if spec.get("gemma") else 1.0
        self.attention = attention_mode()

        def t(name: str) -> torch.Tensor:
            return torch.from_numpy(gguf.tensor(name))

        def opt(name: str) -> Optional[torch.Tensor]:
            return t(name) if name in gguf.tensors else None

        def frozen(name: str) -> torch.nn.Parameter:
            return torch.nn.Parameter(t(name), requires_grad=False)

        def w(name: str) -> torch.Tensor:
            return frozen_matrix(gguf, name)

        self.tok_embd = torch.nn.Parameter(w("token_embd.weight"), requires_grad=False)
        out = None if spec.get("tied_output") or "output.weight" not in gguf.tensors else w("output.weight")
        self.output = LoraLinear(out if out is not None else self.tok_embd.data)
        self.output_norm = frozen("output_norm.weight")
        self.linear_names = linear_names(arch)
        self.layers = torch.nn.ModuleList()
        for i in range(self.n_layer):
            layer = torch.nn.Module()
            layer.attn_norm = frozen("blk.%d.attn_norm.weight" % i)
            layer.ffn_norm = frozen("blk.%d.ffn_norm.weight" % i)
            if spec.get("qk_norm"):
                layer.attn_q_norm = frozen("blk.%d.attn_q_norm.weight" % i)
                layer.attn_k_norm = frozen("blk.%d.attn_k_norm.weight" % i)
            if spec.get("gemma"):
                layer.attn_post_norm = frozen("blk.%d.post_attention_norm.weight" % i)
                layer.ffn_post_norm = frozen("blk.%d.post_ffw_norm.weight" % i)
            for name in self.linear_names:
                setattr(layer, name, LoraLinear(w("blk.%d.%s.weight" % (i, name)), opt("blk.%d.%s.bias" % (i, name))))
            self.layers.append(layer)

        # Llama 3.x divides its RoPE frequencies by rope_freqs (llama.cpp's per-layer rope factors).
        freqs = opt("rope_freqs.weight") if arch == "llama" else None
        half = self.n_rot // 2
        self.inv_freqs: Dict[float, str] = {}
        for base, _ in set(self.layer_rope):
            inv_freq = base ** (-torch.arange(0, half, dtype=torch.float64) * 2.0 / self.n_rot)
            if freqs is not None:
                inv_freq = inv_freq / freqs.to(torch.float64)[:half]
            self.register_buffer("inv_freq_%d" % len(self.inv_freqs), inv_freq, persistent=False)
            self.inv_freqs[base] = "inv_freq_%d" % len(self.inv_freqs)

    def linears(self) -> Iterator[Tuple[str, str, LoraLinear]]:
        """(GGUF tensor name without `.weight`, short name, module) for every linear layer in a block."""
        for i, layer in enumerate(self.layers):
            for name in self.linear_names:
                yield "blk.%d.%s" % (i, name), name, getattr(layer, name)

    def _rope(self, x: torch.Tensor, positions: torch.Tensor, base: float, freq_scale: float) -> torch.Tensor:
        # x: (batch, seq, heads, head_dim)
        inv_freq = getattr(self, self.inv_freqs[base])
        angles = (positions.to(torch.float64)[:, None] * freq_scale) * inv_freq[None, :]
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

    def _qkv(self, layer: torch.nn.Module, h: torch.Tensor, batch: int,
             seq: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q_rows = self.n_head * self.head_dim
        kv_rows = self.n_head_kv * self.head_dim
        if self.spec.get("fused"):
            qkv = layer.attn_qkv(h)
            q, k, v = qkv[..., :q_rows], qkv[..., q_rows:q_rows + kv_rows], qkv[..., q_rows + kv_rows:]
        else:
            q, k, v = layer.attn_q(h), layer.attn_k(h), layer.attn_v(h)
        return (q.reshape(batch, seq, self.n_head, self.head_dim),
                k.reshape(batch, seq, self.n_head_kv, self.head_dim),
                v.reshape(batch, seq, self.n_head_kv, -1))

    def _ffn(self, layer: torch.nn.Module, h: torch.Tensor) -> torch.Tensor:
        if self.spec.get("fused"):
            gate_up = layer.ffn_up(h)
            n_ff = gate_up.shape[-1] // 2
            return layer.ffn_down(F.silu(gate_up[..., :n_ff]) * gate_up[..., n_ff:])
        act = _gelu_tanh if self.spec.get("gemma") else F.silu
        return layer.ffn_down(act(layer.ffn_gate(h)) * layer.ffn_up(h))

    def forward(self, tokens: torch.Tensor, only: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Logits (batch, seq, vocab) for token ids (batch, seq); causal, positions from 0. With `only`
        (a bool mask (batch, seq)), the logits of those positions only, (count, vocab): the output
        layer, the largest matrix, then costs what the trained positions need."""
        batch, seq = tokens.shape
        device = tokens.device
        positions = torch.arange(seq, device=device)
        causal = torch.full((seq, seq), float("-inf"), device=device).triu(1)
        local_mask = causal
        if self.window is not None and any(self.local):
            # Key position p is out of a query at position q's window when q - p >= window.
            local_mask = causal.masked_fill(positions[:, None] - positions[None, :] >= self.window, float("-inf"))
        x = self.tok_embd[tokens].float()
        if self.embed_scale != 1.0:
            x = x * self.embed_scale
        rep = self.n_head // self.n_head_kv
        gemma = self.spec.get("gemma")
        for i, layer in enumerate(self.layers):
            h = _rms_norm(x, layer.attn_norm, self.eps)
            q, k, v = self._qkv(layer, h, batch, seq)
            if self.spec.get("qk_norm"):
                q = _rms_norm(q, layer.attn_q_norm, self.eps)
                k = _rms_norm(k, layer.attn_k_norm, self.eps)
            base, freq_scale = self.layer_rope[i]
            q = self._rope(q, positions, base, freq_scale)
            k = self._rope(k, positions, base, freq_scale)
            if rep > 1:
                k = k.repeat_interleave(rep, dim=2)
                v = v.repeat_interleave(rep, dim=2)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            mask = local_mask if self.local[i] else causal
            att = _attend(q, k, v, self.q_scale, self.attn_softcap, mask, self.attention)
            att = layer.attn_output(att.transpose(1, 2).reshape(batch, seq, -1))
            if gemma:
                att = _rms_norm(att, layer.attn_post_norm, self.eps)
            x = x + att
            h = _rms_norm(x, layer.ffn_norm, self.eps)
            ffn = self._ffn(layer, h)
            if gemma:
                ffn = _rms_norm(ffn, layer.ffn_post_norm, self.eps)
            x = x + ffn
        if only is not None:
            x = x[only]
        logits = self.output(_rms_norm(x, self.output_norm, self.eps))
        if self.final_softcap:
            logits = torch.tanh(logits / self.final_softcap) * self.final_softcap
        return logits

    @torch.no_grad()
    def greedy(self, tokens: Sequence[int], max_tokens: int, eos: Optional[int] = None,
               probs: Optional[List[np.ndarray]] = None) -> List[int]:
        """Greedy continuation token ids; with a `probs` list, the next-token distribution each of them
        was chosen from is appended to it (one per token returned)."""
        ids = list(tokens)
        out = []
        for _ in range(max_tokens):
            logits = self.forward(torch.tensor([ids], device=self.tok_embd.device))[0, -1]
            nxt = int(torch.argmax(logits))
            if eos is not None and nxt == eos:
                break
            if probs is not None:
                probs.append(torch.softmax(logits.double(), dim=-1).cpu().numpy())
            ids.append(nxt)
            out.append(nxt)
        return out
