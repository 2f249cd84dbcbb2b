"""lora_train.py without torch: the training spec and the tokenized dataset are validated, defaults filled in, and every bad input refused naming what is wrong."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import unittest
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lora_train import DEFAULTS, SpecError, load_examples, load_spec  # noqa: E402


class Inputs(unittest.TestCase):
    def setUp(self) -> None:
        self._dir = tempfile.TemporaryDirectory()
        self.dir = self._dir.name

    def tearDown(self) -> None:
        self._dir.cleanup()

    def spec(self, **fields: Any) -> str:
        spec = {"baseModelPath": "m.gguf", "tokensPath": "t.jsonl", "adapterPath": "a.gguf", **fields}
        path = os.path.join(self.dir, "spec.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        return path

    def dataset(self, *lines: str) -> str:
        path = os.path.join(self.dir, "t.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def test_a_minimal_spec_gets_the_defaults(self) -> None:
        spec = load_spec(self.spec())
        self.assertEqual(spec["hyperparameters"], DEFAULTS)
        self.assertEqual((spec["threads"], spec["batchSize"], spec["seed"], spec["device"]), (1, 4, 0, "auto"))

    def test_given_hyperparameters_override_the_defaults_and_nulls_do_not(self) -> None:
        spec = load_spec(self.spec(hyperparameters={"rank": 8, "alpha": None, "epochs": 1}, threads=3, device="cpu"))
        self.assertEqual(spec["hyperparameters"]["rank"], 8)
        self.assertEqual(spec["hyperparameters"]["alpha"], DEFAULTS["alpha"])
        self.assertEqual(spec["hyperparameters"]["epochs"], 1)
        self.assertEqual((spec["threads"], spec["device"]), (3, "cpu"))

    def test_bad_specs_are_refused_naming_the_field(self) -> None:
        cases = [
            ({"adapterPath": ""}, "the training spec has no adapterPath"),
            ({"hyperparameters": {"rank": 0}}, "rank must be a positive integer, got 0"),
            ({"hyperparameters": {"rank": 2.5}}, "rank must be a positive integer, got 2.5"),
            ({"hyperparameters": {"alpha": -1}}, "alpha must be a positive number"),
            ({"hyperparameters": {"epochs": 0}}, "epochs must be a positive integer"),
            ({"hyperparameters": {"learningRate": float("nan")}}, "learningRate must be a positive number"),
            ({"hyperparameters": {"targetModules": []}}, "targetModules must be a non-empty list"),
            ({"device": "tpu"}, "device must be one of auto, cpu, cuda, got 'tpu' \\(TRAINER_DEVICE\\)"),
            ({"peftAdapterDir": ""}, "peftAdapterDir must be a non-empty string when given"),
        ]
        for fields, message in cases:
            with self.subTest(fields=fields), self.assertRaisesRegex(SpecError, message):
                load_spec(self.spec(**fields))

    def test_an_unreadable_spec_is_refused_naming_the_file(self) -> None:
        path = os.path.join(self.dir, "spec.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write("{not json")
        with self.assertRaisesRegex(SpecError, "cannot read the training spec .*spec.json"):
            load_spec(path)
        with self.assertRaisesRegex(SpecError, "cannot read the training spec"):
            load_spec(os.path.join(self.dir, "missing.json"))

    def test_examples_are_read_skipping_blank_lines(self) -> None:
        path = self.dataset('{"prompt": [1, 2], "completion": [3]}', "", '{"prompt": [4], "completion": [5, 6]}')
        self.assertEqual(load_examples(path, 10), [([1, 2], [3]), ([4], [5, 6])])

    def test_bad_examples_are_refused_naming_the_line(self) -> None:
        cases = [
            ('{"prompt": [1], "completion": [10]}', "line 2 is invalid: .*outside the vocabulary"),
            ('{"prompt": [], "completion": [1]}', "line 2 is invalid: an empty prompt"),
            ('{"prompt": [1]}', "line 2 is invalid: 'completion'"),
            ("not json", "line 2 is invalid"),
            ('{"prompt": [1.5], "completion": [1]}', "line 2 is invalid"),
        ]
        for bad, message in cases:
            path = self.dataset('{"prompt": [1], "completion": [2]}', bad)
            with self.subTest(line=bad), self.assertRaisesRegex(SpecError, message):
                load_examples(path, 10)
        with self.assertRaisesRegex(SpecError, "the dataset has no examples"):
            load_examples(self.dataset(""), 10)
        with self.assertRaisesRegex(SpecError, "cannot read the tokenized dataset"):
            load_examples(os.path.join(self.dir, "missing.jsonl"), 10)


if __name__ == "__main__":
    unittest.main()
