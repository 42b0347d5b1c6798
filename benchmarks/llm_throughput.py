"""Local LLM throughput through the workbook's llama_cpp backend, against llama-cpp-python called directly.

For each model (default: both Qwen2.5-Coder models; they must be installed, `make llm-models`):

* prompt evaluation tokens/s (the answer prompt of Q5 over its Top-5, cold cache) and generation
  tokens/s (the same prompt already cached, so the time is generation), with llama-cpp-python alone;
* the same JSON-constrained answer request through ``LlamaCppGenerator`` and directly with
  ``Llama.create_chat_completion``, both from a cold cache: the wrapper's overhead as a ratio;
* prompt caching: a second question over the same evidence shares the system prompt and the
  evidence; its time against the same request from a cold cache.

    .venv/bin/python benchmarks/llm_throughput.py [--models qwen2.5-coder-0.5b] [--max-tokens 64]
    .venv/bin/python benchmarks/llm_throughput.py --omp-ab [--busy 1]   # OMP_WAIT_POLICY PASSIVE vs ACTIVE

``--omp-ab`` times the same generation in two child processes, one per OpenMP wait policy (OpenMP
reads it once, at start), optionally beside ``--busy N`` processes that keep N cores busy, as when
the cores are shared; it prints the ratio (the backend sets PASSIVE unless the user chose).

Calls per minute, the way ``make llm-runs`` makes them (:func:`rag_lib.runner.llm_fill.fill`): the
same ``--calls`` answer requests (different benchmark questions over their Top-5) in this process,
then through llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``, started here on
loopback with the same model file and threads) with 1 and 2 calls in flight; each printed as a ratio
against the in-process peer, with the load average (the cores may be shared). Model loading and the
server's start are not timed. ``--calls-only`` runs only this part:

    .venv/bin/python benchmarks/llm_throughput.py --calls-only --models qwen2.5-coder-0.5b --calls 4

Every ratio compares two runs in this process on the same loaded model; absolute rates depend on
what else the machine is doing (run it on an idle machine).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rag_lib.generation.call_records import LLMRequest
from rag_lib.generation.llama_cpp_backend import LlamaCppGenerator, passive_openmp
from rag_lib.generation.llm_calls import CallRecorder
from rag_lib.generation.llm_server import ServerExecutor
from rag_lib.generation.local_models import model_file
from rag_lib.pipeline.workbench import Workbench
from rag_lib.runner import llm_fill


def _timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def measure(model: str, max_tokens: int, wb: Workbench) -> dict[str, Any]:
    q5 = wb.benchmark.by_casebook("Q5")
    question, other = q5.text("en"), wb.benchmark.by_casebook("Q7").text("en")
    evidence = [wb.by_id[c] for c in wb.rank(question).ids[:5]]
    with tempfile.TemporaryDirectory() as tmp:
        generator = LlamaCppGenerator(model, recorder=CallRecorder(tmp, mode="live"), max_tokens=max_tokens)
        llm = generator.load()
        request = generator.request("answer", question, evidence)
        params = {k: v for k, v in request.params.items() if k != "n_ctx"}
        messages = [dict(m) for m in request.messages]

        # Prompt evaluation alone, cold; then generation with the whole prompt cached.
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        prompt = Jinja2ChatFormatter(template=llm.metadata["tokenizer.chat_template"], eos_token="<|im_end|>",
                                     bos_token="")(messages=messages).prompt
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        llm.reset()
        _, eval_s = _timed(lambda: llm.eval(tokens))
        reply, warm_s = _timed(lambda: llm.create_chat_completion(messages=messages, **params))
        generated = reply["usage"]["completion_tokens"]

        # The same request, cold, directly and through the backend.
        llm.reset()
        direct, direct_s = _timed(lambda: llm.create_chat_completion(messages=messages, **params))
        llm.reset()
        wrapped, wrapped_s = _timed(lambda: generator.complete(request))

        # Prompt caching: another question over the same evidence, after the first one.
        second = generator.request("answer", other, evidence)
        second_messages = [dict(m) for m in second.messages]
        second_params = {k: v for k, v in second.params.items() if k != "n_ctx"}
        llm.reset()
        llm.create_chat_completion(messages=messages, **params)
        _, cached_s = _timed(lambda: llm.create_chat_completion(messages=second_messages, **second_params))
        llm.reset()
        _, cold_s = _timed(lambda: llm.create_chat_completion(messages=second_messages, **second_params))
    return {
        "model": model, "prompt_tokens": len(tokens), "prompt_eval_tok_s": len(tokens) / eval_s,
        "generated_tokens": generated, "generation_tok_s": generated / warm_s if warm_s else float("nan"),
        "direct_s": direct_s, "backend_s": wrapped_s, "backend_over_direct": wrapped_s / direct_s,
        "same_reply": (direct["choices"][0]["message"]["content"] or "") == wrapped.content,
        "second_question_cold_s": cold_s, "second_question_cached_s": cached_s,
        "caching_speedup": cold_s / cached_s if cached_s else float("nan"),
    }


def omp_child(model: str, max_tokens: int) -> None:
    """One timed generation (prompt from a cold cache, then ``max_tokens``): prints seconds."""
    wb = Workbench()
    question = wb.benchmark.by_casebook("Q5").text("en")
    evidence = [wb.by_id[c] for c in wb.rank(question).ids[:5]]
    with tempfile.TemporaryDirectory() as tmp:
        generator = LlamaCppGenerator(model, recorder=CallRecorder(tmp, mode="live"), max_tokens=max_tokens)
        generator.load()
        request = generator.request("answer", question, evidence)
        _, seconds = _timed(lambda: generator.complete(request))
    print(f"{seconds:.3f}")


def _spin() -> None:
    while True:
        pass


def omp_ab(model: str, max_tokens: int, busy: int) -> None:
    """PASSIVE against ACTIVE in child processes, beside ``busy`` spinning processes."""
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(busy)]
    for p in spinners:
        p.start()
    try:
        seconds = {}
        for policy in ("PASSIVE", "ACTIVE"):
            env = {**os.environ, "OMP_WAIT_POLICY": policy}
            out = subprocess.run([sys.executable, __file__, "--omp-child", "--models", model, "--max-tokens",
                                  str(max_tokens)], env=env, capture_output=True, text=True, check=True)
            seconds[policy] = float(out.stdout.strip().splitlines()[-1])
    finally:
        for p in spinners:
            p.terminate()
    print(f"{model}, {busy} busy core(s): OMP_WAIT_POLICY=PASSIVE {seconds['PASSIVE']:.1f} s, ACTIVE "
          f"{seconds['ACTIVE']:.1f} s: PASSIVE is {seconds['ACTIVE'] / seconds['PASSIVE']:.2f}x as fast")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(model: str, n_ctx: int, n_threads: int, ready_s: float = 300) -> Iterator[str]:
    """llama.cpp's server serving ``model`` under its workbook name on a free loopback port; its base URL."""
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file(model)), "--model_alias", model,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(n_threads),
               "--n_threads_batch", str(n_threads), "--seed", "0"]
    with tempfile.TemporaryFile("w+") as log:  # a file, not a pipe: a full pipe would block the server
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   env={**os.environ, "OMP_WAIT_POLICY": passive_openmp()})  # as in-process
        url = f"http://127.0.0.1:{port}/v1"
        try:
            deadline = time.monotonic() + ready_s
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"llama_cpp.server exited with {process.returncode}: {log.read()[-2000:]}")
                try:
                    with urllib.request.urlopen(f"{url}/models", timeout=2):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"llama_cpp.server not ready after {ready_s:.0f} s") from None
                    time.sleep(0.5)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def calls_per_minute(model: str, calls: int, max_tokens: int, wb: Workbench) -> dict[str, Any]:
    """The same answer requests in-process, then through the local server at concurrency 1 and 2."""
    questions = [q.text("en") for q in wb.benchmark][:calls]
    generator = LlamaCppGenerator(model, recorder=CallRecorder(tempfile.mkdtemp(), mode="live"), max_tokens=max_tokens)
    requests: list[LLMRequest] = [generator.request("answer", q, [wb.by_id[c] for c in wb.rank(q).ids[:5]])
                                  for q in questions]
    cache: dict[tuple[str, str], object] = {}
    llm_fill.executor_for(requests[0], cache)
    cache[("llama_cpp", model)].load()  # type: ignore[attr-defined]  # loading is not a call: not timed
    out: dict[str, Any] = {"model": model, "calls": len(requests), "max_tokens": max_tokens,
                           "load_before": os.getloadavg()}
    replies: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        def run(name: str, **kwargs: Any) -> None:
            recorder = CallRecorder(Path(tmp) / name, mode="replay_or_live")
            report = llm_fill.fill(requests, recorder, progress=False, cache=cache, **kwargs)
            if report.made != len(requests):
                raise RuntimeError(f"{name}: {report.made} of {len(requests)} calls made ({dict(report.failed)})")
            out[name] = report.made / report.wall_seconds * 60
            replies[name] = [recorder.load(r.key).response.content for r in requests]  # type: ignore[union-attr]

        run("in_process")
        with llama_server(model, generator.n_ctx, generator.n_threads) as url:
            server = ServerExecutor(url, environ={})
            run("server_c1", server=server, concurrency=1)
            run("server_c2", server=server, concurrency=2)
    out["load_after"] = os.getloadavg()
    out["same_replies"] = replies["server_c1"] == replies["in_process"] == replies["server_c2"]
    return out


def print_calls_per_minute(r: dict[str, Any]) -> None:
    base = r["in_process"]
    print(f"{r['model']}: calls per minute, {r['calls']} answer calls (max_tokens {r['max_tokens']}), make llm-runs' "
          f"fill: in-process {base:.2f}; llama.cpp server, 1 in flight {r['server_c1']:.2f} "
          f"({r['server_c1'] / base:.2f}x in-process), 2 in flight {r['server_c2']:.2f} "
          f"({r['server_c2'] / base:.2f}x); "
          f"same replies: {r['same_replies']}")
    print(f"  load average (1, 5, 15 min) before {', '.join(f'{x:.2f}' for x in r['load_before'])}, after "
          f"{', '.join(f'{x:.2f}' for x in r['load_after'])} on {os.cpu_count()} cores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
    parser.add_argument("--max-tokens", type=int, default=64, help="generation cap per reply (default 64)")
    parser.add_argument("--omp-ab", action="store_true", help="OMP_WAIT_POLICY PASSIVE against ACTIVE")
    parser.add_argument("--busy", type=int, default=1, help="cores kept busy during --omp-ab (default 1)")
    parser.add_argument("--omp-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=4, help="answer calls per condition for calls/min (default 4)")
    parser.add_argument("--calls-only", action="store_true",
                        help="only calls per minute: in-process against the local server at concurrency 1 and 2")
    args = parser.parse_args()
    if args.omp_child:
        omp_child(args.models[0], args.max_tokens)
        return
    if args.omp_ab:
        for model in args.models:
            omp_ab(model, args.max_tokens, args.busy)
        return
    wb = Workbench()
    if args.calls_only:
        for model in args.models:
            print_calls_per_minute(calls_per_minute(model, args.calls, args.max_tokens, wb))
        return
    for model in args.models:
        r = measure(model, args.max_tokens, wb)
        print(f"{r['model']}: prompt eval {r['prompt_eval_tok_s']:.1f} tok/s ({r['prompt_tokens']} tokens), "
              f"generation {r['generation_tok_s']:.1f} tok/s ({r['generated_tokens']} tokens)")
        print(f"  backend / direct, same request from a cold cache: {r['backend_s']:.1f} s / {r['direct_s']:.1f} s "
              f"= {r['backend_over_direct']:.3f} (same reply: {r['same_reply']})")
        print(f"  prompt caching, a second question over the same evidence: cold {r['second_question_cold_s']:.1f} s,"
              f" after the first {r['second_question_cached_s']:.1f} s = {r['caching_speedup']:.2f}x faster")
        print_calls_per_minute(calls_per_minute(model, args.calls, args.max_tokens, wb))


if __name__ == "__main__":
    main()
