"""The adapter in the Hugging Face PEFT layout vLLM and SGLang load: adapter_config.json + adapter_model.safetensors.

safetensors is written by hand (no package): an 8-byte little-endian header length, a JSON header
({name: {dtype, shape, data_offsets}}, offsets relative to the data that follows, padded with spaces
to 8 bytes), then the tensors' raw little-endian bytes, contiguous, in header order.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple

import numpy as np

# GGUF block tensor name -> the Hugging Face module path inside a decoder layer. llama, qwen2, qwen3,
# gemma2 and gemma3 (its text model, Gemma3ForCausalLM) name them alike; phi3 keeps the fused
# qkv_proj (rows q, k, v) and gate_up_proj (rows gate, up) that its GGUF keeps too.
HF_MODULES: Dict[str, str] = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
HF_MODULES_BY_ARCH: Dict[str, Dict[str, str]] = {
    "llama": HF_MODULES, "qwen2": HF_MODULES, "qwen3": HF_MODULES, "gemma2": HF_MODULES, "gemma3": HF_MODULES,
    "phi3": {"attn_qkv": "self_attn.qkv_proj", "attn_output": "self_attn.o_proj", "ffn_up": "mlp.gate_up_proj",
             "ffn_down": "mlp.down_proj"},
}
_DTYPES = {np.dtype("<f4"): "F32", np.dtype("<f2"): "F16"}


def permute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's converter permutation of q/k rows (Hugging Face order -> GGUF order), per head:
    row i of the first half and row i of the second half become rows 2i and 2i+1."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """The inverse of `permute_rows`: GGUF row order -> Hugging Face row order."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def safetensors_bytes(tensors: Mapping[str, np.ndarray], metadata: Optional[Mapping[str, Any]] = None) -> bytes:
    """The safetensors encoding of `tensors` (name -> float32/float16 numpy array), names sorted."""
    header: Dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        arr = np.asarray(tensors[name])
        dtype = np.dtype("<f2") if arr.dtype == np.float16 else np.dtype("<f4")
        data = np.ascontiguousarray(arr, dtype=dtype).tobytes()
        header[name] = {"dtype": _DTYPES[dtype], "shape": [int(d) for d in arr.shape],
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((-len(text)) % 8)
    return len(text).to_bytes(8, "little") + text + b"".join(blobs)


# gemma3's 4B, 12B and 27B (34, 48, 62 blocks, as llama.cpp tells the sizes apart) are the multimodal
# Gemma3ForConditionalGeneration, whose decoder layers sit under a language_model prefix that differs
# between transformers versions: no PEFT folder is written for them rather than one a server misreads.
_MULTIMODAL_LAYERS: Dict[str, Tuple[int, ...]] = {"gemma3": (34, 48, 62)}


def peft_layout_problem(arch: str, n_layer: Optional[int]) -> Optional[str]:
    """Why the PEFT folder cannot be written for this model, or None when it can."""
    if arch not in HF_MODULES_BY_ARCH:
        return "no Hugging Face PEFT layout is known for architecture %r (known: %s)" % (
            arch, ", ".join(sorted(HF_MODULES_BY_ARCH)))
    if n_layer in _MULTIMODAL_LAYERS.get(arch, ()):
        return ("a %s model with %d blocks is a multimodal Gemma 3 (4B, 12B or 27B), whose Hugging Face module "
                "paths the trainer does not write; the GGUF adapter is complete" % (arch, n_layer))
    return None


def hf_modules(arch: str) -> Dict[str, str]:
    """The GGUF -> Hugging Face module names of `arch`; raises ValueError for one without a PEFT layout here."""
    problem = peft_layout_problem(arch, None)
    if problem:
        raise ValueError(problem)
    return HF_MODULES_BY_ARCH[arch]


def peft_tensors(arch: str, n_head: int, n_head_kv: int,
                 loras: Iterable[Tuple[int, str, np.ndarray, np.ndarray]]) -> Dict[str, np.ndarray]:
    """PEFT tensor names and arrays from `loras`: (layer index, GGUF module name, A (rank, in), B (out, rank)).

    A llama GGUF stores q and k rows permuted for its RoPE on adjacent pairs; their B rows are put
    back in the Hugging Face order (A's columns are the layer's inputs, never permuted). The other
    architectures use NEOX RoPE, whose GGUF rows are in the Hugging Face order already (phi3's fused
    rows included)."""
    modules = hf_modules(arch)
    out: Dict[str, np.ndarray] = {}
    for layer, module, a, b in loras:
        if arch == "llama" and module == "attn_q":
            b = unpermute_rows(b, n_head)
        elif arch == "llama" and module == "attn_k":
            b = unpermute_rows(b, n_head_kv)
        prefix = "base_model.model.model.layers.%d.%s" % (layer, modules[module])
        out[prefix + ".lora_A.weight"] = a
        out[prefix + ".lora_B.weight"] = b
    return out


def adapter_config(rank: int, alpha: float, modules: Sequence[str], base_model: str, arch: str = "llama") -> Dict[str, Any]:
    """adapter_config.json's content: a LoRA of `rank` and `alpha` on `modules` (GGUF names) of `arch`."""
    names = hf_modules(arch)
    return {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_model,
        "r": int(rank),
        "lora_alpha": float(alpha),
        "lora_dropout": 0.0,
        "target_modules": sorted(names[m].split(".")[-1] for m in modules),
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "init_lora_weights": True,
        "use_rslora": False,
        "use_dora": False,
        "modules_to_save": None,
        "layers_to_transform": None,
        "rank_pattern": {},
        "alpha_pattern": {},
        "revision": None,
    }


def write_peft_folder(path: str, config: Mapping[str, Any], tensors: Mapping[str, np.ndarray]) -> None:
    """Writes the folder atomically: a temp folder beside `path` (files fsynced), then rename over it."""
    path = os.path.abspath(path.rstrip("/"))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    stale = ".%s.tmp-" % os.path.basename(path)
    for name in os.listdir(parent):
        if name.startswith(stale):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
    tmp = os.path.join(parent, "%s%d" % (stale, os.getpid()))
    os.makedirs(tmp)
    try:
        for name, data in (("adapter_config.json", (json.dumps(config, indent=2) + "\n").encode("utf-8")),
                           ("adapter_model.safetensors", safetensors_bytes(tensors, {"format": "pt"}))):
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
