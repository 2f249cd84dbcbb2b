"""Trains a LoRA adapter on a GGUF base model and writes it as a GGUF adapter llama.cpp loads.

Usage:
  lora_train.py --spec spec.json      train; progress as JSON lines on stdout
  lora_train.py --check               prints {"torch", "numpy", "cuda", "blas"} when both are installed
  lora_train.py --generate --model M --tokens 1,2,3 [--adapter A] [--max-tokens N] [--probabilities]
                                      greedy continuation token ids, and with --probabilities the
                                      next-token distribution before each (checks the forward pass)

The spec (JSON): jobId, baseModelPath, tokensPath (JSONL, one {"prompt": [ids], "completion": [ids]}
a line; loss on the completion ids only), adapterPath, threads, hyperparameters {rank, alpha,
targetModules, epochs, learningRate}, optional batchSize, seed, device (auto | cpu | cuda; default
auto), peftAdapterDir (where the Hugging Face PEFT folder goes too), baseModelName (written in it) and
awaitTokens (true: tokensPath is read only once a line "ready" comes on stdin, so that the caller can
tokenize while this process loads torch and the model; stdin closed without it: exit 3, no event).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from types import ModuleType
from typing import Any, Dict, List, Optional, Tuple

DEFAULTS: Dict[str, Any] = {"rank": 4, "alpha": 8, "targetModules": ["attn_q", "attn_v", "attn_output", "ffn_down"],
            "epochs": 3, "learningRate": 3e-3}
DEFAULT_BATCH_SIZE = 4
DEVICES = ("auto", "cpu", "cuda")


def emit(event: Dict[str, Any]) -> None:
    """Writes one event as a JSON line on stdout, flushed: the platform reads them as they come."""
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class SpecError(Exception):
    """A spec, dataset or device the trainer refuses; reported as a failed event with this message."""


def watch_parent() -> int:
    """Exits this process when the process that started it dies (re-parented to init or a subreaper)."""
    parent = os.getppid()
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent or parent == 1:
        os._exit(3)

    def loop():
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=loop, daemon=True).start()
    return parent


def parent_alive(parent: int) -> bool:
    return os.getppid() == parent


def load_spec(path: str) -> Dict[str, Any]:
    """The training spec at `path`, validated, with defaults filled in; raises SpecError naming what is wrong."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        raise SpecError("cannot read the training spec %s: %s" % (path, e))
    for key in ("baseModelPath", "tokensPath", "adapterPath"):
        if not isinstance(spec.get(key), str) or not spec[key]:
            raise SpecError("the training spec has no %s" % key)
    hp = dict(DEFAULTS)
    hp.update({k: v for k, v in (spec.get("hyperparameters") or {}).items() if v is not None})
    if not isinstance(hp["rank"], int) or hp["rank"] < 1:
        raise SpecError("rank must be a positive integer, got %r" % hp["rank"])
    if not isinstance(hp["alpha"], (int, float)) or hp["alpha"] <= 0:
        raise SpecError("alpha must be a positive number, got %r" % hp["alpha"])
    if not isinstance(hp["epochs"], int) or hp["epochs"] < 1:
        raise SpecError("epochs must be a positive integer, got %r" % hp["epochs"])
    if not isinstance(hp["learningRate"], (int, float)) or not hp["learningRate"] > 0:
        raise SpecError("learningRate must be a positive number, got %r" % hp["learningRate"])
    if not isinstance(hp["targetModules"], list) or not hp["targetModules"]:
        raise SpecError("targetModules must be a non-empty list")
    spec["hyperparameters"] = hp
    spec["threads"] = max(1, int(spec.get("threads") or 1))
    spec["batchSize"] = max(1, int(spec.get("batchSize") or DEFAULT_BATCH_SIZE))
    spec["seed"] = int(spec.get("seed") or 0)
    spec["device"] = spec.get("device") or "auto"
    if spec["device"] not in DEVICES:
        raise SpecError("device must be one of %s, got %r (TRAINER_DEVICE)" % (", ".join(DEVICES), spec["device"]))
    if not isinstance(spec.get("awaitTokens", False), bool):
        raise SpecError("awaitTokens must be true or false, got %r" % spec["awaitTokens"])
    for key in ("peftAdapterDir", "baseModelName"):
        if spec.get(key) is not None and (not isinstance(spec[key], str) or not spec[key]):
            raise SpecError("%s must be a non-empty string when given" % key)
    return spec


def pick_device(torch: ModuleType, wanted: str) -> str:
    """cuda when asked (refused clearly when torch sees none), cpu when asked, else cuda if torch has it."""
    has_cuda = bool(torch.cuda.is_available())
    if wanted == "cuda" and not has_cuda:
        built = getattr(torch.version, "cuda", None)
        why = ("this torch was built without CUDA" if not built
               else "torch (built for CUDA %s) finds no usable GPU or driver" % built)
        raise SpecError("TRAINER_DEVICE=cuda, but %s (torch %s); set TRAINER_DEVICE=cpu or auto" % (why, torch.__version__))
    return "cuda" if wanted == "cuda" or (wanted == "auto" and has_cuda) else "cpu"


def load_examples(path: str, vocab_size: int) -> List[Tuple[List[int], List[int]]]:
    """(prompt ids, completion ids) of each line of the tokenized dataset; raises SpecError naming a bad line."""
    examples: List[Tuple[List[int], List[int]]] = []
    try:
        f = open(path, "r", encoding="utf-8")
    except OSError as e:
        raise SpecError("cannot read the tokenized dataset: %s" % e)
    with f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                prompt, completion = row["prompt"], row["completion"]
                ids = list(prompt) + list(completion)
                if not prompt or not completion or not all(isinstance(i, int) and 0 <= i < vocab_size for i in ids):
                    raise ValueError("an empty prompt or completion, or token ids outside the vocabulary")
            except (ValueError, KeyError, TypeError) as e:
                raise SpecError("tokenized dataset line %d is invalid: %s" % (number, e))
            examples.append((list(prompt), list(completion)))
    if not examples:
        raise SpecError("the dataset has no examples")
    return examples


def train(spec: Dict[str, Any], parent: int) -> None:
    """Trains as `spec` asks, emitting started, progress and completed events; exits if `parent` dies."""
    import numpy as np
    import torch
    from gguf_file import GgufFile, write_gguf
    from model import ARCHS, SUPPORTED_ARCHITECTURES, LlamaModel, resolve_targets
    from peft_folder import adapter_config, peft_layout_problem, peft_tensors, write_peft_folder

    started = time.time()
    torch.set_num_threads(spec["threads"])
    torch.set_num_interop_threads(1)
    torch.manual_seed(spec["seed"])
    hp = spec["hyperparameters"]
    device = pick_device(torch, spec["device"])
    base = GgufFile(spec["baseModelPath"])
    arch = base.get("general.architecture")
    if arch not in ARCHS:
        raise SpecError("the model's architecture is %r; the trainer supports %s" % (arch, ", ".join(SUPPORTED_ARCHITECTURES)))
    try:
        target_names = resolve_targets(arch, hp["targetModules"])
    except ValueError as e:
        raise SpecError(str(e))

    emit({"type": "started", "device": device, "torch": torch.__version__})
    model = LlamaModel(base).to(device)
    vocab = model.tok_embd.shape[0]
    if spec.get("awaitTokens") and sys.stdin.readline().strip() != "ready":
        os._exit(3)  # the caller could not tokenize, or gave up: it reports why
    examples = load_examples(spec["tokensPath"], vocab)
    context = int(base.get("%s.context_length" % model.arch, 0) or 0)
    too_long = [i + 1 for i, (p, c) in enumerate(examples) if context and len(p) + len(c) > context]
    if too_long:
        raise SpecError("example(s) %s are longer than the model's context (%d tokens)" % (too_long[:5], context))

    generator = torch.Generator().manual_seed(spec["seed"])
    params = []
    targets = []
    for full, short, module in model.linears():
        if short in target_names:
            module.add_lora(hp["rank"], float(hp["alpha"]), generator, device)
            params += [module.lora_a, module.lora_b]
            targets.append((full, module))
    optimizer = torch.optim.AdamW(params, lr=float(hp["learningRate"]), weight_decay=0.0)

    batch_size = min(spec["batchSize"], len(examples))
    per_epoch = math.ceil(len(examples) / batch_size)
    total = per_epoch * hp["epochs"]
    step = 0
    epoch_losses: List[float] = []
    rng = np.random.default_rng(spec["seed"])
    for epoch in range(1, hp["epochs"] + 1):
        order = rng.permutation(len(examples))
        losses = []
        for b in range(per_epoch):
            if not parent_alive(parent):
                os._exit(3)
            chunk = [examples[i] for i in order[b * batch_size:(b + 1) * batch_size]]
            width = max(len(p) + len(c) for p, c in chunk)
            tokens = torch.zeros((len(chunk), width), dtype=torch.long)
            labels = torch.full((len(chunk), width), -100, dtype=torch.long)
            for row, (p, c) in enumerate(chunk):
                ids = p + c
                tokens[row, :len(ids)] = torch.tensor(ids)
                # position t predicts token t+1: the completion's tokens are the labels.
                labels[row, len(p) - 1:len(ids) - 1] = torch.tensor(c)
            tokens, labels = tokens.to(device), labels.to(device)
            # Logits of the labelled positions only: the same mean loss, without the output layer's
            # product (and its float32 logits) for the prompt positions.
            labelled = labels != -100
            logits = model(tokens, only=labelled)
            loss = torch.nn.functional.cross_entropy(logits, labels[labelled])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            value = float(loss.detach())
            losses.append(value)
            emit({"type": "progress", "step": step, "totalSteps": total, "epoch": epoch, "loss": round(value, 6)})
        epoch_losses.append(sum(losses) / len(losses))

    tensors = {}
    loras = []
    for full, module in targets:
        a = module.lora_a.detach().cpu().numpy()
        b = module.lora_b.detach().cpu().numpy()
        tensors[full + ".weight.lora_a"] = a
        tensors[full + ".weight.lora_b"] = b
        _, layer, short = full.split(".")
        loras.append((int(layer), short, a, b))
    kv = {
        "general.architecture": model.arch,
        "general.type": "adapter",
        "general.name": str(spec.get("jobId") or "lora"),
        "adapter.type": "lora",
        "adapter.lora.alpha": float(hp["alpha"]),
    }
    adapter_dir = os.path.dirname(os.path.abspath(spec["adapterPath"]))
    os.makedirs(adapter_dir, exist_ok=True)
    stale = ".%s.tmp-" % os.path.basename(spec["adapterPath"])
    for name in os.listdir(adapter_dir):
        if name.startswith(stale):
            os.unlink(os.path.join(adapter_dir, name))
    if not parent_alive(parent):
        os._exit(3)
    peft_dir = spec.get("peftAdapterDir")
    peft_problem = peft_layout_problem(model.arch, model.n_layer) if peft_dir else None
    if peft_problem:
        # The GGUF adapter still serves on llama.cpp; a vLLM/SGLang load finds no folder and says so.
        sys.stderr.write("no Hugging Face PEFT folder written: %s\n" % peft_problem)
        peft_dir = None
    if peft_dir:
        # Before the GGUF: the GGUF's presence is what says the adapter is complete.
        config = adapter_config(hp["rank"], hp["alpha"], sorted({short for _, short, _, _ in loras}),
                                spec.get("baseModelName") or str(base.get("general.name") or ""), model.arch)
        write_peft_folder(peft_dir, config, peft_tensors(model.arch, model.n_head, model.n_head_kv, loras))
    write_gguf(spec["adapterPath"], kv, tensors)
    emit({"type": "completed", "adapterPath": spec["adapterPath"], "device": device,
          **({"peftAdapterDir": peft_dir} if peft_dir else {}),
          "metrics": {"finalLoss": round(epoch_losses[-1], 6), "steps": step,
                      "seconds": round(time.time() - started, 3)}})


def generate(args: argparse.Namespace) -> None:
    """Prints the greedy continuation of --tokens (and with --probabilities its distributions) as JSON."""
    import torch
    from gguf_file import GgufFile
    from model import LlamaModel

    torch.set_num_threads(args.threads)
    base = GgufFile(args.model)
    model = LlamaModel(base)
    if args.adapter:
        adapter = GgufFile(args.adapter)
        alpha = float(adapter.get("adapter.lora.alpha", 0.0))
        modules = {full: module for full, _, module in model.linears()}
        modules["output"] = model.output
        for name in adapter.tensors:
            if name.endswith(".weight.lora_a"):
                full = name[:-len(".weight.lora_a")]
                a = torch.from_numpy(adapter.tensor(name))
                b = torch.from_numpy(adapter.tensor(full + ".weight.lora_b"))
                modules[full].set_lora(a, b, alpha)
    tokens = [int(t) for t in args.tokens.split(",") if t.strip()]
    eos = base.get("tokenizer.ggml.eos_token_id")
    probabilities = [] if args.probabilities else None
    result = {"tokens": model.greedy(tokens, args.max_tokens, None if eos is None else int(eos), probabilities)}
    if probabilities is not None:
        result["probabilities"] = [[round(float(p), 7) for p in step] for step in probabilities]
    print(json.dumps(result))


BLAS_SONAME = ("blas", "mkl", "blis", "atlas")


def classify_blas(path: str) -> Dict[str, Any]:
    """{"name", "library", "detail"} of the BLAS library at path: what its symbols say it is
    (OpenBLAS, BLIS, MKL), or the reference BLAS (Netlib's, Debian's libblas3) when it is a plain
    libblas.so with none of them."""
    import ctypes

    real = os.path.realpath(path)
    try:
        lib = ctypes.CDLL(real)
    except OSError as e:
        return {"name": "unknown", "library": real, "detail": "cannot be loaded: %s" % e}
    if hasattr(lib, "openblas_get_config"):
        lib.openblas_get_config.restype = ctypes.c_char_p
        return {"name": "OpenBLAS", "library": real, "detail": lib.openblas_get_config().decode("utf-8", "replace")}
    if hasattr(lib, "bli_info_get_version_str"):
        lib.bli_info_get_version_str.restype = ctypes.c_char_p
        return {"name": "BLIS", "library": real, "detail": lib.bli_info_get_version_str().decode("utf-8", "replace")}
    if hasattr(lib, "MKL_Get_Version_String") or "mkl" in os.path.basename(real).lower():
        return {"name": "MKL", "library": real, "detail": ""}
    if "atlas" in real.lower():
        return {"name": "ATLAS", "library": real, "detail": ""}
    if os.path.basename(real).startswith("libblas.so"):
        return {"name": "reference", "library": real, "detail": "the reference BLAS: unoptimized, one thread"}
    return {"name": "unknown", "library": real, "detail": ""}


def linked_blas(library: str) -> Optional[List[str]]:
    """The BLAS libraries the dynamic loader resolves for library (ldd, which runs nothing of it), in
    load order, or None when that cannot be asked."""
    import subprocess

    try:
        out = subprocess.run(["ldd", library], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found: List[str] = []
    for line in out.splitlines():
        name, _, rest = line.strip().partition(" => ")
        target = rest.split(" (")[0].strip()
        if any(word in name.lower() for word in BLAS_SONAME) and target.startswith("/"):
            found.append(target)
    return found


def torch_blas(torch_dir: str) -> Dict[str, Any]:
    """Which BLAS torch's matrix products run on: the first library torch's CPU library loads that
    defines sgemm_ (the one its calls bind to), read without importing torch; or, for a torch that
    carries its BLAS inside (MKL linked statically), what torch's build configuration names."""
    import ctypes

    for name in ("libtorch_cpu.so", "libtorch.so"):
        library = os.path.join(torch_dir, "lib", name)
        if os.path.isfile(library):
            break
    else:
        return {"name": "unknown", "library": None, "detail": "no libtorch_cpu.so in %s" % os.path.join(torch_dir, "lib")}
    for path in linked_blas(library) or []:
        try:
            if hasattr(ctypes.CDLL(os.path.realpath(path)), "sgemm_"):
                return classify_blas(path)
        except OSError:
            continue
    try:
        import torch

        config = torch.__config__.show()
    except Exception as e:  # noqa: BLE001 - a torch that does not import says so when it trains
        return {"name": "unknown", "library": None, "detail": "torch could not be asked: %s" % e}
    for line in config.splitlines():
        if "BLAS_INFO=" in line:
            info = line.split("BLAS_INFO=")[1].split(",")[0].strip()
            names = {"mkl": "MKL", "open": "OpenBLAS", "blis": "BLIS", "accelerate": "Accelerate"}
            return {"name": names.get(info, info or "unknown"), "library": None, "detail": "built into torch (BLAS_INFO=%s)" % info}
    return {"name": "unknown", "library": None, "detail": "torch names no BLAS"}


def check() -> int:
    """Prints {"torch", "numpy", "cuda", "blas"} when both are installed, without importing torch
    unless its build has a GPU backend or carries its own BLAS: the import takes about 1.3 CPU-s, a
    CPU-only build answers "no CUDA" from its own version record (torch/version.py: `cuda` and `hip`
    are None), and the BLAS its library loads is asked of the dynamic loader."""
    import importlib.util

    import numpy

    torch_spec = importlib.util.find_spec("torch")
    if torch_spec is None or not torch_spec.submodule_search_locations:
        print("ModuleNotFoundError: No module named 'torch'", file=sys.stderr)
        return 1
    torch_dir = torch_spec.submodule_search_locations[0]
    record_path = os.path.join(torch_dir, "version.py")
    version = None
    if os.path.isfile(record_path):
        record = importlib.util.spec_from_file_location("torch_version_record", record_path)
        version = importlib.util.module_from_spec(record)
        record.loader.exec_module(version)
    recorded = getattr(version, "__version__", None)
    blas = torch_blas(torch_dir)
    if recorded is not None and getattr(version, "cuda", None) is None and getattr(version, "hip", None) is None:
        print(json.dumps({"torch": recorded, "numpy": numpy.__version__, "cuda": False, "blas": blas}))
        return 0
    import torch  # a GPU build (or a torch without its build record): torch itself knows

    print(json.dumps({"torch": recorded or torch.__version__, "numpy": numpy.__version__,
                      "cuda": bool(torch.cuda.is_available()), "blas": blas}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description="LoRA trainer for GGUF models (PyTorch, CPU or CUDA)")
    parser.add_argument("--spec")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--generate", action="store_true")
    parser.add_argument("--model")
    parser.add_argument("--adapter")
    parser.add_argument("--tokens", default="")
    parser.add_argument("--max-tokens", type=int, default=20)
    parser.add_argument("--probabilities", action="store_true", help="with --generate: also the next-token distributions")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    # Torch's OpenMP threads spin for a while after each parallel region, and OpenBLAS's threads after
    # each product: with as many threads as cores, each pool's spinning steals the cores the other's
    # next operation needs. Passive waits made a training step 2.9x faster on 2 cores (bench/trainer.ts,
    # docs/performance.md). Read when the OpenMP runtime loads: set before torch is imported.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

    if args.check:
        return check()
    if args.generate:
        generate(args)
        return 0
    if not args.spec:
        parser.error("--spec is required")
    parent = watch_parent()
    try:
        spec = load_spec(args.spec)
        train(spec, parent)
        return 0
    except SpecError as e:
        emit({"type": "failed", "message": str(e)})
        return 2
    except Exception as e:  # noqa: BLE001 - every failure is reported as an event
        from gguf_file import GgufError
        message = str(e) if isinstance(e, GgufError) else "training failed: %s: %s" % (type(e).__name__, e)
        emit({"type": "failed", "message": message})
        import traceback
        traceback.print_exc(file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
