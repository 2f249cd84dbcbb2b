"""ggml's block-quantized tensor types, dequantized to float32 with numpy, a whole array of blocks at a time.

Each `dequantize_*` takes a uint8 array of shape (blocks, block bytes) and returns float32 values of
shape (blocks, block elements), in the order ggml's own dequantize_row_* writes them; every scale is
an f16 widened to f32 and multiplied in f32, as ggml does, so a value is bit-for-bit ggml's.
"""

from __future__ import annotations

from typing import Callable, Dict, Tuple

import numpy as np

QK = 32      # elements in a block of the legacy types (Q4_0 ... Q8_0, IQ4_NL)
QK_K = 256   # elements in a super-block of the k-quants (Q2_K ... Q6_K, IQ4_XS)

# IQ4_NL and IQ4_XS map each 4-bit code through this non-linear table.
IQ4_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=np.float32)


def _f16(blocks: np.ndarray, at: int, count: int = 1) -> np.ndarray:
    """`count` consecutive f16 fields at byte `at` of each block, as float32 of shape (blocks, count)."""
    return np.ascontiguousarray(blocks[:, at:at + 2 * count]).view("<f2").astype(np.float32)


def _low_high(qs: np.ndarray) -> np.ndarray:
    """The 4-bit codes of (blocks, n) bytes: low nibbles first, then high nibbles: (blocks, 2n)."""
    return np.concatenate((qs & 0x0F, qs >> 4), axis=1)


def _bits(qh: np.ndarray, count: int) -> np.ndarray:
    """Bit i of the little-endian bytes `qh` (blocks, count // 8) for i < count: (blocks, count) 0/1."""
    return np.unpackbits(qh, axis=1, count=count, bitorder="little")


def dequantize_q4_0(b: np.ndarray) -> np.ndarray:
    d = _f16(b, 0)
    return d * (_low_high(b[:, 2:18]).astype(np.float32) - 8.0)


def dequantize_q4_1(b: np.ndarray) -> np.ndarray:
    d, m = _f16(b, 0), _f16(b, 2)
    return d * _low_high(b[:, 4:20]).astype(np.float32) + m


def dequantize_q5_0(b: np.ndarray) -> np.ndarray:
    d = _f16(b, 0)
    q = _low_high(b[:, 6:22]) | (_bits(b[:, 2:6], 32) << 4)
    return d * (q.astype(np.float32) - 16.0)


def dequantize_q5_1(b: np.ndarray) -> np.ndarray:
    d, m = _f16(b, 0), _f16(b, 2)
    q = _low_high(b[:, 8:24]) | (_bits(b[:, 4:8], 32) << 4)
    return d * q.astype(np.float32) + m


def dequantize_q8_0(b: np.ndarray) -> np.ndarray:
    return _f16(b, 0) * b[:, 2:34].view(np.int8).astype(np.float32)


def dequantize_iq4_nl(b: np.ndarray) -> np.ndarray:
    return _f16(b, 0) * IQ4_VALUES[_low_high(b[:, 2:18])]


def _k_scale_min(s: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The eight 6-bit (scale, min) pairs packed in 12 bytes (Q4_K, Q5_K): two (blocks, 8) arrays."""
    s = s.astype(np.uint8)
    low = np.concatenate((s[:, 0:4] & 63, (s[:, 8:12] & 0x0F) | ((s[:, 0:4] >> 6) << 4)), axis=1)
    mins = np.concatenate((s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)), axis=1)
    return low.astype(np.float32), mins.astype(np.float32)


def _chunked_nibbles(qs: np.ndarray, chunks: int) -> np.ndarray:
    """Q4_K/Q5_K order: per 32-byte chunk of qs, 32 low nibbles then 32 high nibbles: (blocks, 64 * chunks)."""
    q = qs.reshape(qs.shape[0], chunks, 32)
    return np.stack((q & 0x0F, q >> 4), axis=2).reshape(qs.shape[0], chunks * 64)


def dequantize_q2_k(b: np.ndarray) -> np.ndarray:
    scales = b[:, 0:16]
    qs = b[:, 16:80].reshape(-1, 2, 1, 32)
    d, dmin = _f16(b, 80), _f16(b, 82)
    shifts = np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)
    # (blocks, half, shift, 32): element 128*half + 32*shift + l.
    q = ((qs >> shifts) & 3).reshape(-1, QK_K).astype(np.float32)
    sc = np.repeat(scales & 0x0F, 16, axis=1).astype(np.float32)
    mn = np.repeat(scales >> 4, 16, axis=1).astype(np.float32)
    return (d * sc) * q - (dmin * mn)


def dequantize_q3_k(b: np.ndarray) -> np.ndarray:
    hmask = b[:, 0:32]
    qs = b[:, 32:96].reshape(-1, 2, 1, 32)
    s = b[:, 96:108]
    d = _f16(b, 108)
    scales = np.concatenate((
        (s[:, 0:4] & 0x0F) | ((s[:, 8:12] & 3) << 4),
        (s[:, 4:8] & 0x0F) | (((s[:, 8:12] >> 2) & 3) << 4),
        (s[:, 0:4] >> 4) | (((s[:, 8:12] >> 4) & 3) << 4),
        (s[:, 4:8] >> 4) | (((s[:, 8:12] >> 6) & 3) << 4),
    ), axis=1).astype(np.float32) - 32.0
    shifts = np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)
    low = ((qs >> shifts) & 3).reshape(-1, QK_K).astype(np.int8)
    # Element 128*half + 32*j + l has its high bit in bit (4*half + j) of hmask[l]; a clear bit subtracts 4.
    high = np.unpackbits(hmask[:, None, :], axis=1, count=8, bitorder="little").reshape(-1, QK_K)
    q = (low - 4 * (1 - high.astype(np.int8))).astype(np.float32)
    return (d * np.repeat(scales, 16, axis=1)) * q


def dequantize_q4_k(b: np.ndarray) -> np.ndarray:
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, mn = _k_scale_min(b[:, 4:16])
    q = _chunked_nibbles(b[:, 16:144], 4).astype(np.float32)
    return np.repeat(d * sc, 32, axis=1) * q - np.repeat(dmin * mn, 32, axis=1)


def dequantize_q5_k(b: np.ndarray) -> np.ndarray:
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, mn = _k_scale_min(b[:, 4:16])
    # Sub-block j (of 32 elements) takes its fifth bit from bit j of qh[l].
    high = np.unpackbits(b[:, None, 16:48], axis=1, count=8, bitorder="little").reshape(-1, QK_K)
    q = (_chunked_nibbles(b[:, 48:176], 4) | (high << 4)).astype(np.float32)
    return np.repeat(d * sc, 32, axis=1) * q - np.repeat(dmin * mn, 32, axis=1)


def dequantize_q6_k(b: np.ndarray) -> np.ndarray:
    ql = b[:, 0:128].reshape(-1, 2, 2, 32)     # (blocks, half, ql[l] or ql[l+32], l)
    qh = b[:, 128:192].reshape(-1, 2, 1, 32)   # (blocks, half, -, l)
    scales = b[:, 192:208].view(np.int8).astype(np.float32)
    d = _f16(b, 208)
    low = np.concatenate((ql & 0x0F, ql >> 4), axis=2)                      # (blocks, half, 4, 32)
    shifts = np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)
    q = (low | (((qh >> shifts) & 3) << 4)).reshape(-1, QK_K).astype(np.float32) - 32.0
    return (d * np.repeat(scales, 16, axis=1)) * q


def dequantize_iq4_xs(b: np.ndarray) -> np.ndarray:
    d = _f16(b, 0)
    scales_h = b[:, 2:4].copy().view("<u2").astype(np.uint16)               # (blocks, 1)
    scales_l = b[:, 4:8]
    ib = np.arange(8)
    low = (scales_l[:, ib // 2] >> (4 * (ib % 2)).astype(np.uint8)) & 0x0F
    high = (scales_h >> (2 * ib).astype(np.uint16)) & 3
    ls = (low.astype(np.int16) | (high.astype(np.int16) << 4)).astype(np.float32) - 32.0
    codes = b[:, 8:136].reshape(-1, 8, 16)
    q = IQ4_VALUES[np.concatenate((codes & 0x0F, codes >> 4), axis=2)].reshape(-1, QK_K)
    return np.repeat(d * ls, 32, axis=1) * q


# type id -> (elements per block, bytes per block, dequantizer)
Dequantize = Callable[[np.ndarray], np.ndarray]
BLOCK_TYPES: Dict[int, Tuple[int, int, Dequantize]] = {
    2: (QK, 18, dequantize_q4_0),
    3: (QK, 20, dequantize_q4_1),
    6: (QK, 22, dequantize_q5_0),
    7: (QK, 24, dequantize_q5_1),
    8: (QK, 34, dequantize_q8_0),
    10: (QK_K, 84, dequantize_q2_k),
    11: (QK_K, 110, dequantize_q3_k),
    12: (QK_K, 144, dequantize_q4_k),
    13: (QK_K, 176, dequantize_q5_k),
    14: (QK_K, 210, dequantize_q6_k),
    20: (QK, 18, dequantize_iq4_nl),
    23: (QK_K, 136, dequantize_iq4_xs),
}
