"""Bad input and faults, as a hostile or careless user would cause them (issue 13).

Every case ends in a named, visible outcome: an exit status and a message that names the problem,
an error kind, or a refusal, never a traceback, an unverified claim or a silently wrong record. The
OpenAI-compatible endpoint is a scripted HTTP server on 127.0.0.1 (:class:`FakeServer`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from doubles import JSON, FakeServer, Reply, completion  # tests/doubles.py (pytest puts tests/ on the path)

from rag_lib.__main__ import main
from rag_lib.core.config import REPO_ROOT, batch_dir
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import SnapshotError, WorkbookError, printable
from rag_lib.core.io import DamagedFileError, read_jsonl, write_text
from rag_lib.core.redaction import REDACTED
from rag_lib.corpus import DERIVED_FILE, load_chunks
from rag_lib.evidence.gated import GatedResult
from rag_lib.generation.base import finish_answer
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.call_records import main as stamp_main
from rag_lib.generation.llm_calls import CallRecorder, LLMCallError, ReplayMissError
from rag_lib.generation.openai_backend import OpenAIGenerator
from rag_lib.generation.schema import Answer
from rag_lib.pipeline.answer import AskOutcome, EvidenceCap, cli_recorder

KEY = "sk-fault-test-0123456789abcdef"
CHUNK = Chunk(id="kv-limits-001-aaaaaaaa", page="kv/platform/limits", ordinal=1, title="Limits",
              heading_path=("Limits",), text="KV is available on the Workers Free plan with 1 GB of storage.",
              start=0, end=62, url="https://developers.cloudflare.com/kv/platform/limits/", embeddable=True,
              oversized=False)
VALID = {"chunk_id": CHUNK.id, "quote": "KV is available on the Workers Free plan with 1 GB of storage."}
FABRICATED = {"chunk_id": CHUNK.id, "quote": "The KV free allowance is 42 GB"}
UNKNOWN = {"chunk_id": "made-up-000-00000000", "quote": "42 GB"}


# -- a scripted OpenAI-compatible server on loopback ------------------------------------------------

def answer_json(*citations: dict[str, str], text: str = "KV has 1 GB of storage on the Free plan.") -> str:
    return json.dumps({"status": "answered", "answer": text, "citations": list(citations), "missing": []})


@pytest.fixture
def fake_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., FakeServer]]:
    """``fake_server(replies)`` starts a server and points the openai generator's env at it."""
    started: list[FakeServer] = []

    def start(replies: list[Reply] | Callable[[dict[str, Any], dict[str, str]], Reply]) -> FakeServer:
        server = FakeServer(replies)
        started.append(server)
        monkeypatch.setenv("RAG_LLM_API_KEY", KEY)
        monkeypatch.setenv("RAG_LLM_BASE_URL", server.url)
        monkeypatch.delenv("RAG_LLM_MODEL", raising=False)
        return server

    yield start
    for server in started:
        server.close()


def generator(tmp_path: Path, **kwargs: Any) -> tuple[OpenAIGenerator, list[float]]:
    sleeps: list[float] = []
    kwargs.setdefault("recorder", CallRecorder(tmp_path / "calls"))
    kwargs.setdefault("max_attempts", 3)
    return OpenAIGenerator(model="fake-model", backoff_s=0.5, sleep=sleeps.append, **kwargs), sleeps


# -- 1. an answer is shown only as far as it is supported -------------------------------------------

def outcome_for(answer: Answer) -> AskOutcome:
    base = {"question": "How much KV storage is free?", "backend": "openai", "model": "m", "model_version": None,
            "evidence_ids": (CHUNK.id,)}
    result = finish_answer(base, answer, [CHUNK])
    return AskOutcome("How much KV storage is free?", "dense", {}, "", [], GatedResult(None, result, True))


def test_every_citation_failing_withholds_the_text_and_names_each_reason() -> None:
    out = outcome_for(Answer.model_validate_json(answer_json(UNKNOWN, text="The KV free allowance is 42 GB.")))
    text = out.render_text()
    assert out.status == "withheld" and "42 GB." not in text.replace('"42 GB"', "")
    assert "answer withheld (verified-citations-only policy): Every citation failed the check" in text
    assert "DROPPED (unknown_id) made-up-000-00000000" in text


def test_a_chinese_asker_reads_why_in_chinese_only() -> None:
    from rag_lib.core.text import language_of
    from rag_lib.pipeline.answer import WITHHELD_ZH, withheld_sentence

    out = outcome_for(Answer.model_validate_json(answer_json(UNKNOWN, text="The KV free allowance is 42 GB.")))
    zh = withheld_sentence("KV 免费额度是多少？", out.gated.result)
    assert WITHHELD_ZH["no_valid_citations"] in zh and language_of(zh) == "zh"
    assert not any(word in zh for word in ("withheld", "Every citation", "supported"))


def test_one_fabricated_citation_withholds_the_unsupported_claim() -> None:
    out = outcome_for(Answer.model_validate_json(
        answer_json(VALID, FABRICATED, text="KV is on the Free plan. The KV free allowance is 42 GB.")))
    text = out.render_text()
    # The claim "42 GB" is stated by no quote it cited: the verification stage drops it (issue 44), and what is
    # left ("KV is on the Free plan.") does not say how much, so the answer is withheld with both reasons.
    result = out.gated.result
    assert out.status == "withheld" and result.support is not None
    assert [c.text for c in result.support.dropped] == ["The KV free allowance is 42 GB."]
    assert result.support.shown is None  # 42 GB appears only in the reason the claim was dropped
    assert ("The answer is not shown: the question asks for a number and no shown claim states one; the claim "
            "'The KV free allowance is 42 GB.' is not stated by its own quotes") in text
    assert f'supported: "{VALID["quote"]}" ({CHUNK.id})' in text
    assert 'DROPPED (quote_not_found) kv-limits-001-aaaaaaaa: "The KV free allowance is 42 GB"' in text
    assert "warning: dropped 1 invalid citation(s)" in text


def test_fully_cited_answer_is_shown_and_exit_codes_differ() -> None:
    from rag_lib.__main__ import EXIT_CODES

    out = outcome_for(Answer.model_validate_json(answer_json(VALID)))
    assert out.status == "answered" and "KV has 1 GB of storage on the Free plan." in out.render_text()
    declined = outcome_for(Answer(status="insufficient", answer="The evidence provided does not include it.",
                                  missing=["price"]))
    assert declined.status == "declined"
    assert len({EXIT_CODES[s] for s in ("answered", "declined", "withheld", "error")}) == 4
    assert EXIT_CODES["answered"] == 0


# -- 2. chunks.jsonl and the normalized pages are verified against the manifest ----------------------

@pytest.fixture
def batch_copy(tmp_path: Path) -> Path:
    root = tmp_path / batch_dir().name
    shutil.copytree(batch_dir(), root)
    return root


def test_committed_batch_verifies() -> None:
    assert len(load_chunks()) > 100


def test_injected_chunk_from_no_known_page_is_an_error(batch_copy: Path) -> None:
    rows = read_jsonl(batch_copy / "chunks.jsonl")
    injected = {**rows[0], "id": "kv/injected-000-deadbeef", "page": "kv/injected",
                "text": "The KV free allowance is 42 GB."}
    with open(batch_copy / "chunks.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(injected) + "\n")
    with pytest.raises(SnapshotError, match=r"1 chunk\(s\) in chunks.jsonl belong to no page of the manifest: "
                                            r"kv/injected-000-deadbeef \(page 'kv/injected'\)"):
        load_chunks(root=batch_copy)


def test_edited_chunk_or_page_and_missing_record_are_errors(batch_copy: Path) -> None:
    path = batch_copy / "chunks.jsonl"
    original = path.read_text(encoding="utf-8")
    path.write_text(original.replace("wrangler", "wrangIer", 1), encoding="utf-8")
    with pytest.raises(SnapshotError, match=r"chunks\.jsonl changed since it was built"):
        load_chunks(root=batch_copy)
    path.write_text(original, encoding="utf-8")
    page = next((batch_copy / "normalized").rglob("*.md"))
    page.write_text(page.read_text(encoding="utf-8") + "\nThe KV free allowance is 42 GB.\n", encoding="utf-8")
    with pytest.raises(SnapshotError, match="is missing or changed since it was built"):
        load_chunks(root=batch_copy)
    (batch_copy / DERIVED_FILE).unlink()
    with pytest.raises(SnapshotError, match=rf"no {re.escape(DERIVED_FILE)}.*python -m rag_lib\.corpus build"):
        load_chunks(root=batch_copy)


# -- 3. every transport outcome of the OpenAI-compatible backend is named ----------------------------

@pytest.mark.parametrize(("case", "reply"), [
    ("html page", (200, {"Content-Type": "text/html"}, b"<html><body>Gateway login</body></html>", 0.0)),
    ("truncated JSON", (200, JSON, completion(answer_json(VALID))[:40], 0.0)),
    ("empty choices", (200, JSON, json.dumps({"id": "c", "object": "chat.completion", "created": 0,
                                              "model": "m", "choices": []}).encode(), 0.0)),
])
def test_malformed_http_200_is_a_bad_reply_retried_and_never_recorded_as_answer(
        fake_server: Callable[..., FakeServer], tmp_path: Path, case: str, reply: Reply) -> None:
    server = fake_server([reply])
    gen, sleeps = generator(tmp_path)
    result = gen.generate("How much KV storage is free?", [CHUNK])
    assert (result.status, result.error_kind) == ("error", "bad_reply"), case
    assert len(server.requests) == 3 and sleeps == [0.5, 1.0]
    assert "not a chat completion" in (result.error or "") and "gave up after 3 attempt(s)" in (result.error or "")
    assert [p.name.endswith(".failed.json") for p in (tmp_path / "calls").iterdir()] == [True]


def test_retry_after_is_honoured_then_the_reply_is_used(
        fake_server: Callable[..., FakeServer], tmp_path: Path) -> None:
    server = fake_server([(429, {**JSON, "Retry-After": "3"}, b'{"error": {"message": "slow down"}}', 0.0),
                          (503, JSON, b'{"error": {"message": "busy"}}', 0.0),
                          (200, JSON, completion(answer_json(VALID)), 0.0)])
    gen, sleeps = generator(tmp_path)
    result = gen.generate("How much KV storage is free?", [CHUNK])
    assert result.status == "answered" and sleeps == [3.0, 1.0] and len(server.requests) == 3


def test_a_retry_after_beyond_the_cap_gives_up_at_once(
        fake_server: Callable[..., FakeServer], tmp_path: Path) -> None:
    server = fake_server([(429, {**JSON, "Retry-After": "3600"}, b'{"error": {"message": "quota"}}', 0.0)])
    gen, sleeps = generator(tmp_path)
    result = gen.generate("Q?", [CHUNK])
    assert result.error_kind == "rate_limited" and "retry after 3600 s" in (result.error or "")
    assert sleeps == [] and len(server.requests) == 1


def test_refused_key_is_not_retried(fake_server: Callable[..., FakeServer], tmp_path: Path) -> None:
    server = fake_server([(401, JSON, b'{"error": {"message": "invalid api key"}}', 0.0)])
    result = generator(tmp_path)[0].generate("Q?", [CHUNK])
    assert result.error_kind == "backend_error" and "HTTP 401" in (result.error or "")
    assert "the key was refused" in (result.error or "") and len(server.requests) == 1


def test_an_endpoint_that_never_answers_times_out_within_the_set_timeout(
        fake_server: Callable[..., FakeServer], tmp_path: Path) -> None:
    server = fake_server([(200, JSON, completion(answer_json(VALID)), 3.0)])
    result = generator(tmp_path, timeout_s=0.3, max_attempts=2)[0].generate("Q?", [CHUNK])
    assert result.error_kind == "timeout" and "no reply within 0.3 s" in (result.error or "")
    assert len(server.requests) == 2


def test_refused_connection_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer([])
    url = server.url
    server.close()  # nothing listens on that port any more
    monkeypatch.setenv("RAG_LLM_API_KEY", KEY)
    monkeypatch.setenv("RAG_LLM_BASE_URL", url)
    result = generator(tmp_path, max_attempts=2)[0].generate("Q?", [CHUNK])
    assert result.error_kind == "connection_failed" and f"cannot connect to {url}" in (result.error or "")


def test_timeout_flag_is_for_the_openai_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "Q?", "--generator", "extractive", "--timeout", "5"]) == 2
    assert "--timeout applies to --generator openai only" in capsys.readouterr().err


# -- 4. records: checksum, failures, replay marker, scratch folder ------------------------------------

REQUEST = LLMRequest(backend="openai", model="m", messages=({"role": "user", "content": "Hi"},), params={})


def live(content: str = '{"ok": true}') -> Callable[[LLMRequest], LLMResponse]:
    return lambda request: LLMResponse(content=content, prompt_tokens=1, completion_tokens=1)


def test_an_edited_response_is_not_replayed(tmp_path: Path) -> None:
    CallRecorder(tmp_path).call(REQUEST, live())
    path = tmp_path / f"{REQUEST.key}.json"
    row = json.loads(path.read_text())
    row["response"]["content"] = '{"ok": false}'
    path.write_text(json.dumps(row))
    with pytest.warns(RuntimeWarning, match="does not match its response_sha256"), pytest.raises(ReplayMissError):
        CallRecorder(tmp_path, mode="replay_only").call(REQUEST, live())


def test_a_failed_call_is_recorded_as_a_failure_and_not_replayed_as_an_answer(tmp_path: Path) -> None:
    def failing(request: LLMRequest) -> LLMResponse:
        raise LLMCallError("bad_reply", "HTTP 200 with no choices")

    with pytest.raises(LLMCallError):
        CallRecorder(tmp_path).call(REQUEST, failing)
    assert CallRecorder(tmp_path).load(REQUEST.key) is None
    with pytest.raises(ReplayMissError, match="its last live call failed: replayed failure: HTTP 200 with no choices"):
        CallRecorder(tmp_path, mode="replay_only").call(REQUEST, live())
    with pytest.raises(LLMCallError, match="replayed failure") as info:
        CallRecorder(tmp_path, mode="replay_only", replay_failures=True).call(REQUEST, live())
    assert info.value.kind == "bad_reply"
    record = CallRecorder(tmp_path).call(REQUEST, live())  # replay_or_live tries again, and it works now
    assert not record.replayed and not (tmp_path / f"{REQUEST.key}.failed.json").exists()


def test_unstamped_old_records_are_refused_until_stamped(tmp_path: Path) -> None:
    CallRecorder(tmp_path).call(REQUEST, live())
    path = tmp_path / f"{REQUEST.key}.json"
    row = json.loads(path.read_text())
    del row["response_sha256"]
    row["format"] = 1
    path.write_text(json.dumps(row))
    with pytest.warns(RuntimeWarning, match="python -m rag_lib.generation stamp"):
        assert CallRecorder(tmp_path).load(REQUEST.key) is None
    assert stamp_main(["stamp", str(tmp_path)]) == 0
    assert CallRecorder(tmp_path).load(REQUEST.key) is not None


def test_cli_recorder_writes_to_scratch_and_replays_committed_records(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    committed = tmp_path / "committed"
    CallRecorder(committed).call(REQUEST, live("from results"))
    recorder = cli_recorder()
    recorder.committed = CallRecorder(committed)
    assert recorder.call(REQUEST, live("new")).response.content == "from results"
    other = LLMRequest("openai", "m", ({"role": "user", "content": "new question"},), {})
    recorder.call(other, live())
    assert (tmp_path / "cache" / "llm_calls_adhoc" / f"{other.key}.json").is_file()
    assert sorted(p.name for p in committed.iterdir()) == [f"{REQUEST.key}.json"]
    assert cli_recorder(live=True).mode == "live"


# -- 5. redaction by exact values of the configured key variables ------------------------------------

def test_an_echoed_key_never_reaches_the_answer_the_label_or_the_record(
        fake_server: Callable[..., FakeServer], tmp_path: Path) -> None:
    fake_server([(200, JSON, completion(answer_json(VALID, text=f"Your key is {KEY}."), model=f"echo-{KEY}"), 0.0)])
    gen, _ = generator(tmp_path)
    with pytest.warns(RuntimeWarning, match="redacted"):
        result = gen.generate("How much KV storage is free?", [CHUNK])
    assert result.answer is not None and result.answer.answer == f"Your key is {REDACTED}."
    assert result.model_version == f"echo-{REDACTED}"
    assert KEY not in json.dumps(result.to_json())
    for path in (tmp_path / "calls").iterdir():
        assert KEY not in path.read_text(encoding="utf-8")
    with pytest.warns(RuntimeWarning, match="redacted from"):
        write_text(tmp_path / "report.md", f"model {KEY}")  # every other output path goes through it too
    assert (tmp_path / "report.md").read_text() == f"model {REDACTED}"


def test_unrelated_token_variables_do_not_rewrite_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "answered")
    monkeypatch.setenv("RAG_LLM_API_KEY", "status")  # a configured key, but short: only whole values go
    CallRecorder(tmp_path).call(REQUEST, live('{"status": "answered"}'))
    record = CallRecorder(tmp_path).load(REQUEST.key)
    assert record is not None and record.response.content == '{"status": "answered"}'


# -- 6. command-line input ---------------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "message"), [
    (["rank", "q999"], "no benchmark question has the id 'q999'; nearest ids: "),
    (["ask", "q999"], "no benchmark question has the id 'q999'; nearest ids: "),
    (["rank", "How?", "--k", "0"], "k must be between 1 and "),
    (["rank", "How?", "--k", "-3"], "k must be between 1 and "),
    (["ask", "How?", "--k", "0"], "k must be between 1 and "),
    (["ask", "How?", "--k", "100000", "--generator", "openai"], "k must be between 1 and "),
    (["rank", "How? " * 25_000], "over the limit of 4000; it was refused"),
    (["rank", "How?", "--retriever", "bm25:anything"], "bm25 takes no embedder"),
])
def test_bad_cli_input_is_a_named_error(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_benchmark_id_resolves_for_ask_and_rank() -> None:
    from rag_lib.pipeline.explain import resolve_question
    from rag_lib.pipeline.workbench import Workbench

    wb = Workbench()
    text, question = resolve_question(wb, "q07", "zh")
    assert question is not None and question.id == "q07" and text == question.text("zh")
    with pytest.raises(WorkbookError, match="nearest ids: q07"):
        resolve_question(wb, "q7", None)


def test_control_characters_are_not_echoed(capsys: pytest.CaptureFixture[str]) -> None:
    assert printable("a\x1b[2Jb\x07c\x9bd\ne\tf") == "ab" + "cd\ne\tf"
    assert main(["rank", "\x1b[2Jq999"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "'q999'" in err


def test_paid_endpoint_evidence_is_capped_before_sending(
        fake_server: Callable[..., FakeServer], tmp_path: Path) -> None:
    server = fake_server([(200, JSON, completion(answer_json(VALID)), 0.0)])
    capped = EvidenceCap(generator(tmp_path)[0], max_tokens=10)
    result = capped.generate("How much KV storage is free?", [CHUNK] * 5)
    assert result.error_kind == "evidence_too_large" and "over the cap of 10" in (result.error or "")
    assert server.requests == []


# -- 7. clean errors, lock, scratch notebooks, failure causes, file modes -----------------------------

def test_damaged_jsonl_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    path.write_text('{"id": 1}\n{"id": \n', encoding="utf-8")
    with pytest.raises(DamagedFileError, match=r"chunks.jsonl, line 2 column \d+: not valid JSON"):
        read_jsonl(path)


def _run(module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=REPO_ROOT,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_module_commands_give_one_line_errors_on_damaged_input(tmp_path: Path) -> None:
    bad_yaml = tmp_path / "questions.yaml"
    bad_yaml.write_text("questions: [\n  - id: q01\n", encoding="utf-8")
    bad_chunks = tmp_path / "chunks.jsonl"
    bad_chunks.write_text("{broken\n", encoding="utf-8")
    results = tmp_path / "results"
    (results / "00_corpus").mkdir(parents=True)
    (results / "expected.yaml").write_text("figures:\n- {experiment: 00_corpus, path: pages, value: 1}\n")
    (results / "00_corpus" / "results.json").write_text('{"pages": ', encoding="utf-8")
    cases = [
        (_run("rag_lib.benchmark", "--path", str(bad_yaml)), "is not valid YAML"),
        (_run("rag_lib.benchmark", "--chunks", str(bad_chunks)), "chunks.jsonl, line 1 column 2: not valid JSON"),
        (_run("rag_lib.corpus", "stats", "--batch", "no-such-batch"), "No manifest at"),
        (_run("rag_lib.runner.expected", env={"RAG_RESULTS_DIR": str(results)}), "results.json, line 1 column 11"),
        (_run("rag_lib.generation", "stamp", str(tmp_path / "no-such-folder")), "no call-record folder here"),
    ]
    for done, message in cases:
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert message in done.stderr and "RuntimeWarning" not in done.stderr, done.stderr


def test_unwritable_cache_keeps_the_vectors(tmp_path: Path) -> None:
    from rag_lib.embedding import EmbeddingStore, get_embedder

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    store = EmbeddingStore(blocker / "embeddings", progress=False)  # cannot be created, even as root
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        matrix = store.embed_chunks(get_embedder("all-minilm-l6-v2-int8"), [CHUNK])
    assert matrix.vectors.shape == (1, 384)


def test_second_reproduce_is_refused_and_leftovers_are_removed(tmp_path: Path) -> None:
    from rag_lib.runner.reproduce import ReproduceBusyError, reproduce_lock

    leftover = tmp_path / "notebooks" / ".05_q7_diagnosis.running.ipynb"
    leftover.parent.mkdir()
    leftover.write_text("{}")
    with reproduce_lock(tmp_path):
        assert not leftover.exists()
        with pytest.raises(ReproduceBusyError, match=f"another `make reproduce` \\(pid {os.getpid()}\\)"), \
                reproduce_lock(tmp_path):
            pass
    with reproduce_lock(tmp_path):  # released after the first run
        pass


def test_sigterm_removes_the_scratch_notebook(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import signal, time
        from pathlib import Path
        from rag_lib.runner.reproduce import _terminate, reproduce_lock
        signal.signal(signal.SIGTERM, _terminate)
        root = Path({str(tmp_path)!r})
        with reproduce_lock(root):
            scratch = root / "notebooks" / ".x.running.ipynb"
            scratch.parent.mkdir(exist_ok=True)
            scratch.write_text("{{}}")
            try:
                print("ready", flush=True)
                time.sleep(60)
            finally:
                scratch.unlink()
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=REPO_ROOT)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    assert process.returncode != 0 and not (tmp_path / "notebooks" / ".x.running.ipynb").exists()
    ignored = subprocess.run(["git", "check-ignore", "-q", "results/notebooks/.x.running.ipynb"], cwd=REPO_ROOT)
    assert ignored.returncode == 0


def test_a_failed_notebook_keeps_its_cause_in_the_index(tmp_path: Path) -> None:
    from papermill.exceptions import PapermillExecutionError

    from rag_lib.presentation.readme import write_results_index
    from rag_lib.results.runs import NotebookRun
    from rag_lib.runner.reproduce import failure_cause

    error = PapermillExecutionError(3, 4, "1/0", "ZeroDivisionError", "division by zero", [])
    cause = failure_cause(error)
    assert cause == "PapermillExecutionError: ZeroDivisionError: division by zero"
    write_results_index(tmp_path, [NotebookRun("00_corpus", "00_corpus")], {"00_corpus": cause})
    index = (tmp_path / "README.md").read_text()
    assert "FAILED: PapermillExecutionError: ZeroDivisionError: division by zero" in index


def test_written_files_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_text(tmp_path / "README.md", "x")
        assert (tmp_path / "README.md").stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(old)


def test_no_traceback_from_cli_for_a_damaged_chunk_set(batch_copy: Path, monkeypatch, capsys) -> None:
    import rag_lib.pipeline.workbench as workbench

    (batch_copy / "chunks.jsonl").write_text("{broken\n", encoding="utf-8")
    real = workbench.load_chunks
    monkeypatch.setattr(workbench, "load_chunks", lambda batch=None: real(root=batch_copy))
    assert main(["rank", "How?"]) == 2
    assert re.search(r"chunks.jsonl, line 1 column 2: not valid JSON", capsys.readouterr().err)


# -- end to end: `ask` on the real corpus against the fake endpoint ----------------------------------

@pytest.mark.slow
def test_ask_end_to_end_withholds_marks_replays_and_keeps_results_clean(
        fake_server: Callable[..., FakeServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import rag_lib.pipeline.answer as answer
    from rag_lib.generation.call_records import DEFAULT_CALLS_DIR
    from rag_lib.pipeline.workbench import Workbench

    by_id = Workbench().by_id

    def reply(body: dict[str, Any], headers: dict[str, str]) -> Reply:  # cite the first chunk truly, once falsely
        first = re.search(r"chunk_id: (\S+)", body["messages"][-1]["content"]).group(1)  # type: ignore[union-attr]
        quote = " ".join(by_id[first].text.split()[:6])
        content = answer_json({"chunk_id": first, "quote": quote}, FABRICATED | {"chunk_id": first},
                              text="Part one. The KV free allowance is 42 GB.")
        return 200, JSON, completion(content), 0.0

    server = fake_server(reply)
    monkeypatch.delenv("RAG_RESULTS_DIR", raising=False)  # the gate's parameters: the committed 03 results
    monkeypatch.setattr(answer, "ADHOC_CALLS_DIR", str(tmp_path / "adhoc"))
    committed = sorted(p.name for p in DEFAULT_CALLS_DIR.iterdir())
    # The chunk pipeline: the fake server reads chunk ids from the prompt (the narrowed one sends unit ids).
    assert main(["ask", "q05", "--generator", "openai", "--pipeline", "chunks", "--timeout", "30"]) == 4
    out = capsys.readouterr().out
    assert "outcome: withheld" in out and "call: live" in out and "The KV free allowance is 42 GB." not in out
    assert "DROPPED (quote_not_found)" in out and KEY not in out
    assert main(["ask", "q05", "--generator", "openai", "--pipeline", "chunks", "--timeout", "30"]) == 4
    assert "call: REPLAYED from a recorded call" in capsys.readouterr().out and len(server.requests) == 1
    assert len(list((tmp_path / "adhoc").glob("*.json"))) == 1
    assert sorted(p.name for p in DEFAULT_CALLS_DIR.iterdir()) == committed
    assert main(["ask", "q05", "--generator", "openai", "--max-evidence-tokens", "20"]) == 2
    assert "evidence_too_large" in capsys.readouterr().out and len(server.requests) == 1
    assert main(["ask", "q05", "--generator", "openai", "--k", "40"]) == 2  # the gate was fitted at k = 5
    assert "fitted by notebook 03 at k = 5" in capsys.readouterr().err and len(server.requests) == 1
