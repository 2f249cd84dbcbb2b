"""gguf_file.py: a GGUF written by write_gguf reads back as written (metadata of every value type, float and quantized tensors), and bad files are refused clearly."""

from __future__ import annotations

import os
import struct
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gguf_file import (  # noqa: E402
    DEFAULT_ALIGNMENT, GGML_BF16, GGML_F16, GGML_F32, GGML_IQ4_NL, GGML_Q4_0, GGML_Q8_0, T_ARRAY, T_BOOL,
    T_FLOAT32, T_FLOAT64, T_INT8, T_INT16, T_INT32, T_INT64, T_STRING, T_UINT8, T_UINT16, T_UINT32, T_UINT64,
    GgufError, GgufFile, RawTensor, write_gguf,
)


def f16_bytes(value: float) -> bytes:
    return np.array([value], dtype="<f2").tobytes()


class GgufTestCase(unittest.TestCase):
    def setUp(self) -> None:
        self._dir = tempfile.TemporaryDirectory()
        self.dir = self._dir.name
        self.path = os.path.join(self.dir, "m.gguf")

    def tearDown(self) -> None:
        self._dir.cleanup()

    def round_trip(self, kv: dict, tensors: dict, kv_types: dict | None = None) -> GgufFile:
        write_gguf(self.path, kv, tensors, kv_types)
        return GgufFile(self.path)


class MetadataRoundTrip(GgufTestCase):
    def test_every_scalar_type_reads_back_with_its_type_and_value(self) -> None:
        values = {
            "u8": (T_UINT8, 255), "i8": (T_INT8, -128), "u16": (T_UINT16, 65535), "i16": (T_INT16, -32768),
            "u32": (T_UINT32, 2**32 - 1), "i32": (T_INT32, -(2**31)), "u64": (T_UINT64, 2**64 - 1),
            "i64": (T_INT64, -(2**63)), "f32": (T_FLOAT32, 0.1), "f64": (T_FLOAT64, 0.1), "bool": (T_BOOL, True),
        }
        f = self.round_trip({k: v for k, (_, v) in values.items()}, {}, {k: t for k, (t, _) in values.items()})
        for key, (vtype, value) in values.items():
            self.assertEqual(f.kv_types[key], vtype, key)
        for key in ("u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"):
            self.assertEqual(f.kv[key], values[key][1], key)
        # f32 keeps float32's precision only; f64 the exact double.
        self.assertEqual(f.kv["f32"], float(np.float32(0.1)))
        self.assertNotEqual(f.kv["f32"], 0.1)
        self.assertEqual(f.kv["f64"], 0.1)
        self.assertIs(f.kv["bool"], True)

    def test_python_values_get_their_default_types(self) -> None:
        f = self.round_trip({"s": "héllo · 世界", "n": 7, "x": 2.5, "b": False, "strs": ["a", "", "ü"]}, {})
        self.assertEqual(f.kv_types, {"s": T_STRING, "n": T_UINT32, "x": T_FLOAT32, "b": T_BOOL, "strs": T_ARRAY})
        self.assertEqual(f.kv["s"], "héllo · 世界")
        self.assertEqual(f.kv["n"], 7)
        self.assertEqual(f.kv["x"], 2.5)
        self.assertIs(f.kv["b"], False)
        self.assertEqual(f.kv["strs"], ["a", "", "ü"])
        self.assertEqual(f.get("missing", "dflt"), "dflt")

    def test_numeric_arrays_read_back_with_their_dtype(self) -> None:
        arrays = {
            "u8": np.array([0, 255], np.uint8), "i8": np.array([-128, 127], np.int8),
            "u16": np.array([1, 65535], np.uint16), "i16": np.array([-32768, 5], np.int16),
            "u32": np.array([2**32 - 1], np.uint32), "i32": np.array([-1, 2, -3], np.int32),
            "u64": np.array([2**64 - 1], np.uint64), "i64": np.array([-(2**63)], np.int64),
            "f32": np.array([0.5, -1.25, 1e30], np.float32), "f64": np.array([0.1, -1e300], np.float64),
            "empty": np.array([], np.int32),
        }
        f = self.round_trip(arrays, {})
        for key, arr in arrays.items():
            got = f.kv[key]
            self.assertEqual(f.kv_types[key], T_ARRAY, key)
            self.assertEqual(got.dtype, arr.dtype.newbyteorder("<"), key)
            np.testing.assert_array_equal(got, arr, key)

    def test_a_value_of_no_gguf_type_is_refused_and_leaves_no_file(self) -> None:
        with self.assertRaisesRegex(GgufError, "cannot write metadata bad of type dict"):
            write_gguf(self.path, {"bad": {"a": 1}}, {})
        self.assertEqual(os.listdir(self.dir), [])


class TensorRoundTrip(GgufTestCase):
    def test_float_tensors_read_back_exactly_with_ggml_shape_reversed(self) -> None:
        rng = np.random.default_rng(1)
        f32 = rng.standard_normal((3, 5)).astype(np.float32)
        f16 = rng.standard_normal((2, 7)).astype(np.float16)
        vec = np.arange(4, dtype=np.float32)
        f = self.round_trip({"general.architecture": "llama"}, {"a": f32, "b": f16, "v": vec})
        self.assertEqual(f.version, 3)
        self.assertEqual(f.tensors["a"][0], [5, 3])
        self.assertEqual(f.tensors["b"][0], [7, 2])
        self.assertEqual(f.tensor_type("a"), GGML_F32)
        self.assertEqual(f.tensor_type("b"), GGML_F16)
        self.assertEqual(f.data_start % DEFAULT_ALIGNMENT, 0)
        for name in ("a", "b", "v"):
            self.assertEqual(f.tensors[name][2] % DEFAULT_ALIGNMENT, 0, name)
        got = f.tensor("a")
        self.assertEqual(got.dtype, np.float32)
        np.testing.assert_array_equal(got, f32)
        np.testing.assert_array_equal(f.tensor("b"), f16.astype(np.float32))
        half = f.tensor("b", np.float16)
        self.assertEqual(half.dtype, np.float16)
        np.testing.assert_array_equal(half, f16)
        np.testing.assert_array_equal(f.tensor("v"), vec)
        kind, bits = f.tensor16("a")
        self.assertEqual(kind, "f16")
        np.testing.assert_array_equal(bits, f32.astype(np.float16))

    def test_bf16_tensors_widen_exactly_and_stay_bf16_in_16_bits(self) -> None:
        bits = np.array([[0x3F80, 0xC020], [0x0000, 0x4780]], dtype="<u2")  # 1.0, -2.5, 0.0, 65536.0
        f = self.round_trip({}, {"w": RawTensor(GGML_BF16, (2, 2), bits.tobytes())})
        self.assertEqual(f.tensor_type("w"), GGML_BF16)
        np.testing.assert_array_equal(f.tensor("w"), np.array([[1.0, -2.5], [0.0, 65536.0]], np.float32))
        kind, raw = f.tensor16("w")
        self.assertEqual(kind, "bf16")
        np.testing.assert_array_equal(raw, bits)

    def test_f32_beyond_float16_is_kept_as_bf16_rounded_to_nearest_even(self) -> None:
        # 1 + 2^-8 and 1 + 3 * 2^-8 lie halfway between bf16 neighbours: ties go to the even one.
        values = np.array([1e5, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.0], np.float32)
        f = self.round_trip({}, {"w": values})
        with np.errstate(over="ignore"), self.assertRaisesRegex(GgufError, "beyond float16's range"):
            f.tensor("w", np.float16)
        with np.errstate(over="ignore"):
            kind, raw = f.tensor16("w")
        self.assertEqual(kind, "bf16")
        self.assertEqual([int(b) for b in raw], [0x47C3, 0x3F80, 0x3F82, 0xC000])

    def test_q8_0_blocks_read_back_dequantized(self) -> None:
        q = np.arange(-16, 48, dtype=np.int8).reshape(2, 32)
        scales = (0.5, -0.125)
        data = b"".join(f16_bytes(d) + row.tobytes() for d, row in zip(scales, q))
        f = self.round_trip({}, {"q": RawTensor(GGML_Q8_0, (2, 32), data)})
        expected = np.stack([np.float32(d) * q[i].astype(np.float32) for i, d in enumerate(scales)])
        got = f.tensor("q")
        self.assertEqual(got.shape, (2, 32))
        np.testing.assert_array_equal(got, expected)

    def test_q4_0_nibbles_are_low_halves_first_and_offset_by_8(self) -> None:
        codes = np.arange(32) % 16                       # element i's 4-bit code
        packed = (codes[:16] | (codes[16:] << 4)).astype(np.uint8)
        f = self.round_trip({}, {"q": RawTensor(GGML_Q4_0, (1, 32), f16_bytes(2.0) + packed.tobytes())})
        np.testing.assert_array_equal(f.tensor("q")[0], 2.0 * (codes - 8).astype(np.float32))

    def test_iq4_nl_codes_map_through_the_non_linear_table(self) -> None:
        table = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]
        codes = (np.arange(32) * 7) % 16
        packed = (codes[:16] | (codes[16:] << 4)).astype(np.uint8)
        f = self.round_trip({}, {"q": RawTensor(GGML_IQ4_NL, (1, 32), f16_bytes(0.25) + packed.tobytes())})
        np.testing.assert_array_equal(f.tensor("q")[0], np.array([0.25 * table[c] for c in codes], np.float32))

    def test_a_rewrite_replaces_the_file_and_leaves_no_temp_file(self) -> None:
        write_gguf(self.path, {"n": 1}, {"a": np.zeros(2, np.float32)})
        write_gguf(self.path, {"n": 2}, {"b": np.ones(3, np.float32)})
        self.assertEqual(os.listdir(self.dir), ["m.gguf"])
        f = GgufFile(self.path)
        self.assertEqual(f.kv["n"], 2)
        self.assertEqual(list(f.tensors), ["b"])


class Refusals(GgufTestCase):
    def test_bad_magic(self) -> None:
        with open(self.path, "wb") as out:
            out.write(b"GGML" + bytes(60))
        with self.assertRaisesRegex(GgufError, "not a GGUF file"):
            GgufFile(self.path)

    def test_unsupported_version(self) -> None:
        with open(self.path, "wb") as out:
            out.write(b"GGUF" + struct.pack("<IQQ", 1, 0, 0))
        with self.assertRaisesRegex(GgufError, "version 1 is not supported"):
            GgufFile(self.path)

    def test_truncated_header(self) -> None:
        write_gguf(self.path, {"general.name": "x" * 100}, {})
        with open(self.path, "rb") as src:
            head = src.read(60)
        with open(self.path, "wb") as out:
            out.write(head)
        with self.assertRaisesRegex(GgufError, "ends in the middle of its header"):
            GgufFile(self.path)

    def test_truncated_tensor_data(self) -> None:
        write_gguf(self.path, {}, {"a": np.ones((64, 64), np.float32)})
        size = os.path.getsize(self.path)
        with open(self.path, "r+b") as out:
            out.truncate(size - 1000)
        with self.assertRaisesRegex(GgufError, "ends inside its tensor data"):
            GgufFile(self.path).tensor("a")

    def test_a_missing_tensor_is_named(self) -> None:
        f = self.round_trip({}, {"a": np.zeros(1, np.float32)})
        with self.assertRaisesRegex(GgufError, "tensor nope is missing from m.gguf"):
            f.tensor("nope")

    def test_an_unreadable_type_is_named_with_the_readable_ones(self) -> None:
        f = self.round_trip({}, {"q": RawTensor(9, (1, 32), bytes(36))})  # Q8_1
        with self.assertRaisesRegex(GgufError, r"stored as Q8_1; the trainer reads F32, F16, BF16, Q4_0"):
            f.tensor("q")

    def test_rows_not_a_multiple_of_the_block(self) -> None:
        f = self.round_trip({}, {"q": RawTensor(GGML_Q8_0, (1, 16), bytes(34))})
        with self.assertRaisesRegex(GgufError, "rows of 16 values, not a multiple of Q8_0's block of 32"):
            f.tensor("q")


if __name__ == "__main__":
    unittest.main()
