"""GGUF files: read a model's metadata and tensors, write a LoRA adapter (GGUF v3, little-endian)."""

import mmap
import os
import struct

import numpy as np

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

# ggml tensor types this reader dequantizes.
GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30
GGML_TYPE_NAMES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
    10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 30: "BF16",
}


class GgufError(Exception):
    pass


class _Reader:
    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    def take(self, n):
        if self.pos + n > len(self.buf):
            raise GgufError("the file ends in the middle of its header (truncated or not GGUF)")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def scalar(self, fmt):
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))[0]

    def string(self):
        n = self.scalar("<Q")
        return bytes(self.take(n)).decode("utf-8", errors="replace")

    def value(self, vtype):
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

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            # Mapped, not read: a model's tensors are copied out one at a time as torch needs them.
            self._data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        r = _Reader(memoryview(self._data))
        if bytes(r.take(4)) != GGUF_MAGIC:
            raise GgufError("%s is not a GGUF file (bad magic)" % path)
        self.version = r.scalar("<I")
        if self.version not in (2, 3):
            raise GgufError("GGUF version %d is not supported (2 and 3 are)" % self.version)
        n_tensors = r.scalar("<Q")
        n_kv = r.scalar("<Q")
        self.kv = {}
        self.kv_types = {}
        for _ in range(n_kv):
            key = r.string()
            vtype = r.scalar("<I")
            self.kv[key] = r.value(vtype)
            self.kv_types[key] = vtype
        self.tensors = {}
        for _ in range(n_tensors):
            name = r.string()
            n_dims = r.scalar("<I")
            ne = [r.scalar("<Q") for _ in range(n_dims)]
            ttype = r.scalar("<I")
            offset = r.scalar("<Q")
            self.tensors[name] = (ne, ttype, offset)
        alignment = int(self.kv.get("general.alignment", DEFAULT_ALIGNMENT))
        self.data_start = (r.pos + alignment - 1) // alignment * alignment

    def get(self, key, default=None):
        return self.kv.get(key, default)

    def tensor(self, name):
        """The tensor as float32 with numpy shape reversed from ggml's ne (ne[0] varies fastest)."""
        if name not in self.tensors:
            raise GgufError("tensor %s is missing from %s" % (name, os.path.basename(self.path)))
        ne, ttype, offset = self.tensors[name]
        count = int(np.prod(ne)) if ne else 1
        start = self.data_start + offset
        shape = tuple(reversed(ne))
        if ttype == GGML_F32:
            arr = np.frombuffer(self._data, dtype="<f4", count=count, offset=start)
        elif ttype == GGML_F16:
            arr = np.frombuffer(self._data, dtype="<f2", count=count, offset=start).astype(np.float32)
        elif ttype == GGML_BF16:
            raw = np.frombuffer(self._data, dtype="<u2", count=count, offset=start)
            arr = (raw.astype(np.uint32) << 16).view(np.float32)
        elif ttype == GGML_Q8_0:
            blocks = count // 32
            raw = np.frombuffer(self._data, dtype=np.uint8, count=blocks * 34, offset=start).reshape(blocks, 34)
            scale = raw[:, :2].copy().view("<f2").astype(np.float32)
            quants = raw[:, 2:].copy().view(np.int8).astype(np.float32)
            arr = (quants * scale).reshape(-1)
        else:
            raise GgufError(
                "tensor %s is stored as %s; the trainer reads F32, F16, BF16 and Q8_0 models only "
                "(convert the model to f16 first)" % (name, GGML_TYPE_NAMES.get(ttype, "type %d" % ttype)))
        return np.array(arr, dtype=np.float32).reshape(shape)


def _pack_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


_DTYPE_TO_ARRAY_TYPE = {np.dtype(v).str: k for k, v in _ARRAY_DTYPE.items() if k != T_BOOL}


def _pack_kv(key, value, vtype=None):
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


def write_gguf(path, kv, tensors, kv_types=None):
    """Writes a GGUF v3 file atomically: a temp file beside `path`, fsync, rename.

    `tensors` maps names to float32 or float16 numpy arrays in numpy shape (ggml ne is the reverse);
    `kv_types` optionally gives a scalar's GGUF type (as `GgufFile.kv_types` reads them)."""
    kv_types = kv_types or {}
    alignment = DEFAULT_ALIGNMENT
    header = bytearray()
    header += GGUF_MAGIC + struct.pack("<I", 3) + struct.pack("<Q", len(tensors)) + struct.pack("<Q", len(kv))
    for key, value in kv.items():
        header += _pack_kv(key, value, kv_types.get(key))
    blobs = []
    offset = 0
    for name, arr in tensors.items():
        half = arr.dtype == np.float16
        data = np.ascontiguousarray(arr, dtype="<f2" if half else "<f4").tobytes()
        header += _pack_string(name) + struct.pack("<I", arr.ndim)
        for dim in reversed(arr.shape):
            header += struct.pack("<Q", dim)
        header += struct.pack("<I", GGML_F16 if half else GGML_F32) + struct.pack("<Q", offset)
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
