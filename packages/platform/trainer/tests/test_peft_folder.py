"""peft_folder.py: the q/k row permutation and its inverse, the PEFT tensors and config, and the folder written then read back (safetensors parsed with the standard library and numpy)."""

from __future__ import annotations

import json
import os
import struct
import sys
import tempfile
import unittest
from typing import Any, Dict, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from peft_folder import (  # noqa: E402
    adapter_config, hf_modules, peft_layout_problem, peft_tensors, permute_rows, safetensors_bytes, unpermute_rows,
    write_peft_folder,
)


def read_safetensors(data: bytes) -> Tuple[Dict[str, Any], Dict[str, np.ndarray], int]:
    """(header, tensors, header length) parsed from safetensors bytes, checking the layout's invariants."""
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length].decode("utf-8"))
    body = data[8 + length:]
    tensors = {}
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, stop = entry["data_offsets"]
        if start != end:
            raise AssertionError("tensor %s starts at %d, not right after the previous one (%d)" % (name, start, end))
        dtype = {"F32": "<f4", "F16": "<f2"}[entry["dtype"]]
        tensors[name] = np.frombuffer(body[start:stop], dtype=dtype).reshape(entry["shape"])
        end = stop
    if end != len(body):
        raise AssertionError("%d bytes of data, %d described" % (len(body), end))
    return header, tensors, length


class Permutation(unittest.TestCase):
    def test_permute_interleaves_each_heads_two_halves(self) -> None:
        # Two heads of four rows: per head, row i of the first half and row i of the second become 2i, 2i+1.
        w = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
        got = permute_rows(w, 2)
        np.testing.assert_array_equal(got, w[[0, 2, 1, 3, 4, 6, 5, 7]])

    def test_unpermute_gathers_even_then_odd_rows_of_each_head(self) -> None:
        w = np.arange(12, dtype=np.float32)  # a vector: three heads of four rows
        np.testing.assert_array_equal(unpermute_rows(w, 3), w[[0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11]])
        w = np.arange(16, dtype=np.float32)  # two heads of eight
        np.testing.assert_array_equal(unpermute_rows(w, 2), w[[0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15]])

    def test_each_is_the_inverse_of_the_other(self) -> None:
        rng = np.random.default_rng(0)
        for n_head, head_rows, cols in ((8, 8, 64), (4, 16, 3), (1, 2, 5)):
            w = rng.standard_normal((n_head * head_rows, cols)).astype(np.float32)
            p = permute_rows(w, n_head)
            if head_rows > 2:
                self.assertFalse(np.array_equal(p, w), "the permutation moves rows")
            np.testing.assert_array_equal(unpermute_rows(p, n_head), w)
            np.testing.assert_array_equal(permute_rows(unpermute_rows(w, n_head), n_head), w)


class Tensors(unittest.TestCase):
    def loras(self) -> list:
        rng = np.random.default_rng(2)
        # stories260K's shapes: 8 heads of 8 (q: 64 rows), 4 KV heads (k, v: 32 rows), rank 2.
        return [(1, "attn_q", rng.standard_normal((2, 64)), rng.standard_normal((64, 2))),
                (1, "attn_k", rng.standard_normal((2, 64)), rng.standard_normal((32, 2))),
                (3, "attn_v", rng.standard_normal((2, 64)), rng.standard_normal((32, 2)))]

    def test_llama_q_and_k_rows_are_unpermuted_with_their_own_head_counts(self) -> None:
        loras = self.loras()
        out = peft_tensors("llama", 8, 4, loras)
        prefix = "base_model.model.model.layers.%d.self_attn.%s.lora_%s.weight"
        self.assertEqual(sorted(out), sorted(prefix % (layer, module, ab) for layer, module in
                                             ((1, "q_proj"), (1, "k_proj"), (3, "v_proj")) for ab in "AB"))
        np.testing.assert_array_equal(out[prefix % (1, "q_proj", "B")], unpermute_rows(loras[0][3], 8))
        np.testing.assert_array_equal(out[prefix % (1, "k_proj", "B")], unpermute_rows(loras[1][3], 4))
        self.assertFalse(np.array_equal(out[prefix % (1, "k_proj", "B")], unpermute_rows(loras[1][3], 8)))
        np.testing.assert_array_equal(out[prefix % (3, "v_proj", "B")], loras[2][3])
        for i, (layer, module) in enumerate(((1, "q_proj"), (1, "k_proj"), (3, "v_proj"))):
            np.testing.assert_array_equal(out[prefix % (layer, module, "A")], loras[i][2])

    def test_neox_architectures_keep_the_gguf_row_order(self) -> None:
        loras = self.loras()
        out = peft_tensors("qwen2", 8, 4, loras)
        np.testing.assert_array_equal(out["base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight"], loras[0][3])

    def test_phi3_names_its_fused_modules(self) -> None:
        a, b = np.zeros((2, 4)), np.zeros((12, 2))
        out = peft_tensors("phi3", 2, 2, [(0, "attn_qkv", a, b), (0, "ffn_up", a, b)])
        self.assertIn("base_model.model.model.layers.0.self_attn.qkv_proj.lora_A.weight", out)
        self.assertIn("base_model.model.model.layers.0.mlp.gate_up_proj.lora_B.weight", out)
        self.assertEqual(sorted(adapter_config(2, 4, ["attn_qkv", "ffn_up"], "m", "phi3")["target_modules"]),
                         ["gate_up_proj", "qkv_proj"])

    def test_layouts_that_cannot_be_written_are_named(self) -> None:
        self.assertIsNone(peft_layout_problem("llama", 5))
        self.assertIsNone(peft_layout_problem("gemma3", 26))
        self.assertIn("multimodal Gemma 3", peft_layout_problem("gemma3", 34) or "")
        self.assertIn("'gpt2' (known: gemma2, gemma3, llama, phi3, qwen2, qwen3)", peft_layout_problem("gpt2", 12) or "")
        with self.assertRaisesRegex(ValueError, "no Hugging Face PEFT layout is known for architecture 'gpt2'"):
            hf_modules("gpt2")


class Folder(unittest.TestCase):
    def setUp(self) -> None:
        self._dir = tempfile.TemporaryDirectory()
        self.parent = self._dir.name
        self.path = os.path.join(self.parent, "peft")

    def tearDown(self) -> None:
        self._dir.cleanup()

    def test_the_folder_reads_back_as_written(self) -> None:
        rng = np.random.default_rng(3)
        tensors = {"z.lora_B.weight": rng.standard_normal((64, 4)).astype(np.float32),
                   "a.lora_A.weight": rng.standard_normal((4, 64)).astype(np.float32),
                   "m.half": np.array([[1.5, -2.0, 65504.0]], np.float16)}
        config = adapter_config(4, 8, ["attn_v", "attn_q", "ffn_down"], "stories260K")
        write_peft_folder(self.path + "/", config, tensors)

        self.assertEqual(sorted(os.listdir(self.parent)), ["peft"])
        self.assertEqual(sorted(os.listdir(self.path)), ["adapter_config.json", "adapter_model.safetensors"])
        with open(os.path.join(self.path, "adapter_config.json"), encoding="utf-8") as f:
            read_config = json.load(f)
        self.assertEqual(read_config, config)
        self.assertEqual(read_config["peft_type"], "LORA")
        self.assertEqual(read_config["r"], 4)
        self.assertEqual(read_config["lora_alpha"], 8.0)
        self.assertEqual(read_config["target_modules"], ["down_proj", "q_proj", "v_proj"])
        self.assertEqual(read_config["base_model_name_or_path"], "stories260K")

        with open(os.path.join(self.path, "adapter_model.safetensors"), "rb") as f:
            header, read, length = read_safetensors(f.read())
        self.assertEqual(length % 8, 0)
        self.assertEqual(header["__metadata__"], {"format": "pt"})
        self.assertEqual([k for k in header if k != "__metadata__"], sorted(tensors))
        self.assertEqual(header["z.lora_B.weight"]["dtype"], "F32")
        self.assertEqual(header["z.lora_B.weight"]["shape"], [64, 4])
        self.assertEqual(header["m.half"]["dtype"], "F16")
        for name, arr in tensors.items():
            self.assertEqual(read[name].dtype, arr.dtype, name)
            np.testing.assert_array_equal(read[name], arr, name)

    def test_a_float64_tensor_is_written_as_f32(self) -> None:
        header, read, _ = read_safetensors(safetensors_bytes({"w": np.array([0.1, 2.0], np.float64)}))
        self.assertEqual(header["w"]["dtype"], "F32")
        np.testing.assert_array_equal(read["w"], np.array([0.1, 2.0], np.float32))

    def test_a_rewrite_replaces_the_folder_and_clears_stale_temp_folders(self) -> None:
        stale = os.path.join(self.parent, ".peft.tmp-999999")
        os.makedirs(stale)
        write_peft_folder(self.path, {"r": 1}, {"old": np.zeros(1, np.float32)})
        with open(os.path.join(self.path, "extra.txt"), "w", encoding="utf-8") as f:
            f.write("left by someone")
        write_peft_folder(self.path, {"r": 2}, {"new": np.ones(2, np.float32)})
        self.assertEqual(sorted(os.listdir(self.parent)), ["peft"])
        self.assertEqual(sorted(os.listdir(self.path)), ["adapter_config.json", "adapter_model.safetensors"])
        with open(os.path.join(self.path, "adapter_model.safetensors"), "rb") as f:
            _, read, _ = read_safetensors(f.read())
        self.assertEqual(list(read), ["new"])

    def test_a_failed_write_leaves_the_previous_folder_and_no_temp_folder(self) -> None:
        write_peft_folder(self.path, {"r": 1}, {"w": np.zeros(1, np.float32)})
        with self.assertRaises(TypeError):
            write_peft_folder(self.path, {"r": object()}, {"w": np.ones(1, np.float32)})
        self.assertEqual(sorted(os.listdir(self.parent)), ["peft"])
        with open(os.path.join(self.path, "adapter_config.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f), {"r": 1})


if __name__ == "__main__":
    unittest.main()
