"""GGUF files: read a model's metadata and tensors, write a LoRA adapter (GGUF v3, little-endian)."""

from __future__ import annotations

import mmap
import os
import struct
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from quants import BLOCK_TYPES

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# Metadata value types.
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, \
    T_UINT64, T_INT64, T_FLOAT64 = range(13)

_SCALAR = {
    T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I", T_INT32: "<i",
    T_FLOAT32: "<f", T_BOOL: "<?", T_UINT64: "<Q", T_INT64: "<q", T_FLOAT64: "<d",
}
_ARRAY_DTYPE = {
    T_UINT8: "<u1", T_INT8: "<i1", T_UINT16: "<u2", T_INT16: "<i2", T_UINT32: "<u4", T_INT32: "<i4",
    T_FLOAT32: "<f4", T_BOOL: "<u1", T_UINT64: "<u8", T_INT64: "<i8", T_FLOAT64: "<f8",
}

# ggml tensor type ids (ggml.h's enum ggml_type).
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q4_1, GGML_Q5_0, GGML_Q5_1, GGML_Q8_0 = 0, 1, 2, 3, 6, 7, 8
GGML_Q2_K, GGML_Q3_K, GGML_Q4_K, GGML_Q5_K, GGML_Q6_K = 10, 11, 12, 13, 14
GGML_IQ4_NL, GGML_IQ4_XS, GGML_BF16 = 20, 23, 30
READABLE_TYPES = (GGML_F32, GGML_F16, GGML_BF16) + tuple(sorted(BLOCK_TYPES))
# Dequantized per slice of this many values: bounds the float32 temporaries of a big quantized tensor.
_DEQUANT_CHUNK = 1 << 22
GGML_TYPE_NAMES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
    10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS",
    18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16",
    26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}
SUPPORTED_TYPE_NAMES = [GGML_TYPE_NAMES[t] for t in READABLE_TYPES]
DTypeLike = Union[type, np.dtype, str]


class GgufError(Exception):
    """A file that is not a GGUF the trainer reads, or a tensor it cannot read; the message says which."""


class _Reader:
    def __init__(self, buf: memoryview) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if self.pos + n > len(self.buf):
            raise GgufError("the file ends in the middle of its header (truncated or not GGUF)")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def scalar(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))[0]

    def string(self) -> str:
        n = self.scalar("<Q")
        return bytes(self.take(n)).decode("utf-8", errors="replace")

    def value(self, vtype: int) -> Any:
        if vtype in _SCALAR:
            return self.scalar(_SCALAR[vtype])
        if vtype == T_STRING:
            return self.string()
        if vtype == T_ARRAY:
            item_type = self.scalar("<I")
            count = self.scalar("<Q")
            if item_type in _ARRAY_DTYPE:
                dtype = np.dtype(_ARRAY_DTYPE[item_type])
                data = np.frombuffer(self.take(count * dtype.itemsize), dtype=dtype)
                return data
            return [self.value(item_type) for _ in range(count)]
        raise GgufError("unknown metadata value type %d" % vtype)


class GgufFile:
    """A GGUF file's metadata (`kv`) and tensor table; `tensor(name)` returns float32 numpy arrays."""

    def __init__(self, path: str) -> None:
        self.path = path
        with open(path, "rb") as f:
            # Mapped, not read: a model's tensors are copied out one at a time as torch needs them.
            self._data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self._fd = os.open(path, os.O_RDONLY)
        r = _Reader(memoryview(self._data))
        if bytes(r.take(4)) != GGUF_MAGIC:
            raise GgufError("%s is not a GGUF file (bad magic)" % path)
        self.version = r.scalar("<I")
        if self.version not in (2, 3):
            raise GgufError("GGUF version %d is not supported (2 and 3 are)" % self.version)
        n_tensors = r.scalar("<Q")
        n_kv = r.scalar("<Q")
        self.kv: Dict[str, Any] = {}
        self.kv_types: Dict[str, int] = {}
        for _ in range(n_kv):
            key = r.string()
            vtype = r.scalar("<I")
            self.kv[key] = r.value(vtype)
            self.kv_types[key] = vtype
        # name -> (ggml ne, ggml type id, offset from data_start)
        self.tensors: Dict[str, Tuple[List[int], int, int]] = {}
        for _ in range(n_tensors):
            name = r.string()
            n_dims = r.scalar("<I")
            ne = [r.scalar("<Q") for _ in range(n_dims)]
            ttype = r.scalar("<I")
            offset = r.scalar("<Q")
            self.tensors[name] = (ne, ttype, offset)
        alignment = int(self.kv.get("general.alignment", DEFAULT_ALIGNMENT))
        self.data_start = (r.pos + alignment - 1) // alignment * alignment

    def get(self, key: str, default: Any = None) -> Any:
        return self.kv.get(key, default)

    def tensor_type(self, name: str) -> int:
        """The ggml type id of a tensor."""
        return self._entry(name)[1]

    def _entry(self, name: str) -> Tuple[List[int], int, int]:
        if name not in self.tensors:
            raise GgufError("tensor %s is missing from %s" % (name, os.path.basename(self.path)))
        ne, ttype, offset = self.tensors[name]
        if ttype not in READABLE_TYPES:
            raise GgufError(
                "tensor %s is stored as %s; the trainer reads %s" % (
                    name, GGML_TYPE_NAMES.get(ttype, "type %d" % ttype), ", ".join(SUPPORTED_TYPE_NAMES)))
        return ne, ttype, offset

    def _read(self, start: int, size: int) -> bytearray:
        data = bytearray(size)
        view = memoryview(data)
        done = 0
        while done < size:
            n = os.preadv(self._fd, [view[done:]], start + done)
            if n <= 0:
                raise GgufError("%s ends inside its tensor data (truncated)" % os.path.basename(self.path))
            done += n
        return data

    def tensor(self, name: str, dtype: DTypeLike = np.float32) -> np.ndarray:
        """The tensor with numpy shape reversed from ggml's ne (ne[0] varies fastest), as `dtype`
        (float32 or float16; a value beyond float16's range raises). Read with pread, not through
        the mapping, and dequantized a slice of rows at a time: no page of the file stays resident
        and no float32 copy of a whole quantized tensor is made when float16 is asked."""
        ne, ttype, offset = self._entry(name)
        dtype = np.dtype(dtype)
        count = int(np.prod(ne)) if ne else 1
        start = self.data_start + offset
        shape = tuple(reversed(ne))
        if ttype in (GGML_F32, GGML_F16):
            raw = np.frombuffer(self._read(start, count * (4 if ttype == GGML_F32 else 2)),
                                dtype="<f4" if ttype == GGML_F32 else "<f2")
            out = raw if raw.dtype == dtype else raw.astype(dtype)
        elif ttype == GGML_BF16:
            raw = np.frombuffer(self._read(start, count * 2), dtype="<u2")
            out = (raw.astype(np.uint32) << 16).view(np.float32)
            out = out if dtype == np.float32 else out.astype(dtype)
        else:
            per_block, block_bytes, dequantize = BLOCK_TYPES[ttype]
            row = int(ne[0])
            if row % per_block:
                raise GgufError("tensor %s has rows of %d values, not a multiple of %s's block of %d" % (
                    name, row, GGML_TYPE_NAMES[ttype], per_block))
            blocks = count // per_block
            out = np.empty(count, dtype=dtype)
            step = max(1, _DEQUANT_CHUNK // per_block)
            for first in range(0, blocks, step):
                n = min(step, blocks - first)
                raw = np.frombuffer(self._read(start + first * block_bytes, n * block_bytes), dtype=np.uint8)
                values = dequantize(raw.reshape(n, block_bytes)).reshape(-1)
                out[first * per_block:(first + n) * per_block] = values
        if dtype == np.float16 and not np.isfinite(out).all():
            raise GgufError("tensor %s has values beyond float16's range" % name)
        return out.reshape(shape)

    def tensor16(self, name: str) -> Tuple[str, np.ndarray]:
        """The tensor in 16 bits: ("f16", float16 array), or ("bf16", uint16 array of bfloat16 bits)
        for a BF16 tensor or one whose values exceed float16's range."""
        ne, ttype, _ = self._entry(name)
        if ttype == GGML_BF16:
            count = int(np.prod(ne)) if ne else 1
            raw = np.frombuffer(self._read(self.data_start + self.tensors[name][2], count * 2), dtype="<u2")
            return "bf16", raw.reshape(tuple(reversed(ne)))
        try:
            return "f16", self.tensor(name, np.float16)
        except GgufError:
            wide = self.tensor(name)
            # Round to nearest even into the upper 16 bits.
            bits = wide.view(np.uint32).astype(np.uint64)
            return "bf16", ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def _pack_string(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


_DTYPE_TO_ARRAY_TYPE = {np.dtype(v).str: k for k, v in _ARRAY_DTYPE.items() if k != T_BOOL}


def _pack_kv(key: str, value: Any, vtype: Optional[int] = None) -> bytes:
    out = _pack_string(key)
    if vtype is not None and vtype in _SCALAR:
        return out + struct.pack("<I", vtype) + struct.pack(_SCALAR[vtype], value)
    if isinstance(value, np.ndarray):
        item = _DTYPE_TO_ARRAY_TYPE[value.dtype.str]
        return out + struct.pack("<I", T_ARRAY) + struct.pack("<IQ", item, len(value)) + value.tobytes()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return out + struct.pack("<I", T_ARRAY) + struct.pack("<IQ", T_STRING, len(value)) + \
            b"".join(_pack_string(v) for v in value)
    if isinstance(value, str):
        return out + struct.pack("<I", T_STRING) + _pack_string(value)
    if isinstance(value, float):
        return out + struct.pack("<I", T_FLOAT32) + struct.pack("<f", value)
    if isinstance(value, bool):
        return out + struct.pack("<I", T_BOOL) + struct.pack("<?", value)
    if isinstance(value, int):
        return out + struct.pack("<I", T_UINT32) + struct.pack("<I", value)
    raise GgufError("cannot write metadata %s of type %s" % (key, type(value).__name__))


class RawTensor:
    """A tensor written as given: its ggml type id, numpy-order shape, and encoded bytes."""

    def __init__(self, ggml_type: int, shape: Sequence[int], data: bytes) -> None:
        self.ggml_type, self.shape, self.data = ggml_type, tuple(shape), data


def write_gguf(path: str, kv: Mapping[str, Any], tensors: Mapping[str, Union[np.ndarray, RawTensor]],
               kv_types: Optional[Mapping[str, int]] = None) -> None:
    """Writes a GGUF v3 file atomically: a temp file beside `path`, fsync, rename.

    `tensors` maps names to float32 or float16 numpy arrays in numpy shape (ggml ne is the reverse),
    or to `RawTensor`s (already encoded blocks of any ggml type); `kv_types` optionally gives a
    scalar's GGUF type (as `GgufFile.kv_types` reads them)."""
    kv_types = kv_types or {}
    alignment = DEFAULT_ALIGNMENT
    header = bytearray()
    header += GGUF_MAGIC + struct.pack("<I", 3) + struct.pack("<Q", len(tensors)) + struct.pack("<Q", len(kv))
    for key, value in kv.items():
        header += _pack_kv(key, value, kv_types.get(key))
    blobs = []
    offset = 0
    for name, arr in tensors.items():
        if isinstance(arr, RawTensor):
            ttype, shape, data = arr.ggml_type, arr.shape, bytes(arr.data)
        else:
            half = arr.dtype == np.float16
            ttype, shape = (GGML_F16 if half else GGML_F32), arr.shape
            data = np.ascontiguousarray(arr, dtype="<f2" if half else "<f4").tobytes()
        header += _pack_string(name) + struct.pack("<I", len(shape))
        for dim in reversed(shape):
            header += struct.pack("<Q", dim)
        header += struct.pack("<I", ttype) + struct.pack("<Q", offset)
        blobs.append(data)
        offset += (len(data) + alignment - 1) // alignment * alignment
    pad = (-len(header)) % alignment
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, ".%s.tmp-%d" % (os.path.basename(path), os.getpid()))
    try:
        with open(tmp, "wb") as f:
            f.write(header)
            f.write(b"\0" * pad)
            for data in blobs:
                f.write(data)
                f.write(b"\0" * ((-len(data)) % alignment))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass
