"""Support, not substrings: meaningful quotes, and answers carried by their verified quotes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rag_lib.core.documents import Chunk
from rag_lib.generation.base import finish_answer
from rag_lib.generation.citations import check_citation
from rag_lib.generation.schema import Answer, Citation
from rag_lib.generation.support import span_problem, unit_spans
from rag_lib.verification.statements import check_support, checkable_statements

TEXT = (
    "Workers KV is a global key-value store. The free plan includes 1 GB of storage.\n\n"
    "| Feature | Limit |\n| --- | --- |\n| Reads per day | 100,000 |\n| Value size | 25 MiB |\n\n"
    "- Run `wrangler kv namespace create` to add a namespace.\n"
    "- Set `compatibility_date` in wrangler.toml before you deploy."
)
CHUNK = Chunk(id="kv-001", page="kv/platform/limits", title="Limits", heading_path=("KV",), text=TEXT,
              start=0, end=len(TEXT), url="https://developers.cloudflare.com/kv/platform/limits/", ordinal=0,
              embeddable=True, oversized=False)
EVIDENCE = {CHUNK.id: CHUNK}


def _reason(quote: str) -> str | None:
    return check_citation(CHUNK.id, quote, EVIDENCE).reason


def test_whole_units_are_valid_quotes():
    assert _reason("The free plan includes 1 GB of storage.") is None
    assert _reason("| Value size | 25 MiB |") is None
    assert _reason("Run `wrangler kv namespace create` to add a namespace.") is None


def test_letters_markup_and_header_rows_are_not():
    assert _reason("e") == "fragment"
    assert _reason(".") == "markup"
    assert _reason("| --- | --- |") == "markup"
    assert _reason("| Feature | Limit |") == "markup"
    assert _reason("ore") == "fragment"  # inside "store"
    assert _reason("free plan") == "markup"  # two words: no statement
    assert _reason("free plan includes") == "partial"  # words, but neither a unit nor a clause


def test_a_clause_of_the_stated_length_is_valid():
    assert _reason("The free plan includes 1 GB of storage") is None  # no final period: still the unit
    assert _reason("Workers KV is a global key-value") is None  # a clause of 30+ characters


def test_header_and_separator_rows_are_not_units():
    units = [TEXT[a:b] for a, b in unit_spans(TEXT)]
    assert "| Feature | Limit |" not in units and "| --- | --- |" not in units
    assert "| Reads per day | 100,000 |" in units


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(TEXT) - 1), st.integers(1, 40))
def test_a_random_substring_is_valid_only_when_meaningful(start, length):
    end = min(len(TEXT), start + length)
    quote = TEXT[start:end]
    if not quote.strip():
        return
    reason = _reason(quote)
    inside_word = (start > 0 and TEXT[start - 1].isalnum() and TEXT[start].isalnum()) or (
        end < len(TEXT) and TEXT[end - 1].isalnum() and TEXT[end].isalnum())
    if inside_word:
        assert reason is not None
    if reason is None:  # valid: three words at least, and a whole unit or a long clause
        assert len(quote.split()) >= 2 and any(ch.isalpha() for ch in quote)
        assert span_problem(TEXT, start, end) is None


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**7).filter(lambda n: str(n) not in TEXT.replace(",", "")))
def test_an_answer_stating_a_number_no_quote_contains_is_never_shown(number):
    answer = f"The free plan includes {number} GB of storage."
    report = check_support(answer, "How much storage does the KV free plan include?",
                           ["The free plan includes 1 GB of storage."])
    assert not report.supported and [s.text for s in report.unsupported] == [f"{number} GB"]


def test_the_unit_must_match_and_may_be_translated():
    quote = ["| Value size | 25 MiB |"]
    assert check_support("最大为 25 MiB。", "值最大多大？", quote).supported
    assert not check_support("The limit is 25 GB.", "How large can a value be?", quote).supported
    assert check_support("最多 30 秒", "多久？", ["Requests time out after 30 seconds."]).supported
    assert check_support("每天 100000 次读取", "每天多少次读取？", ["| Reads per day | 100,000 |"]).supported


def test_identifiers_and_urls_must_be_quoted_unless_the_question_names_them():
    quote = ["Set `compatibility_date` in wrangler.toml before you deploy."]
    q = "Where do I set the compatibility date?"
    assert check_support("Set `compatibility_date` in `wrangler.toml`.", q, quote).supported
    assert not check_support("Set `compatibility_flags` in wrangler.toml.", q, quote).supported
    assert not check_support("See https://example.com/kv for details.", q, quote).supported
    # A name the question gives is the asker's; one it does not give must be quoted.
    asked = check_support("Use wrangler.toml.", "Is it set in wrangler.toml?", ["Set it before you deploy."])
    assert not asked.unsupported and asked.restates_question  # nothing quoted added: no answer
    assert not check_support("Use wrangler.jsonc.", "Where is it set?", ["Set it in wrangler.toml."]).supported


def test_an_answer_that_restates_the_question_is_no_answer():
    q = "How much storage does the KV free plan include?"
    report = check_support("The KV free plan includes storage.", q, ["| Feature | Limit |"])
    assert report.restates_question and not report.supported
    assert check_support("It includes 1 GB.", q, ["The free plan includes 1 GB of storage."]).supported


def test_statements_found_in_an_answer():
    found = [(s.kind, s.text) for s in checkable_statements(
        "Run `wrangler deploy` [2]; the limit is 10 ms and 1,000 requests, see https://x.dev/a.\n1. R2 works.")]
    assert ("identifier", "wrangler deploy") in found
    assert ("number", "10 ms") in found and ("number", "1,000") in found
    assert ("url", "https://x.dev/a") in found
    assert all(text not in {"2", "1", "R2"} for _, text in found)


def _answer(text: str, quote: str) -> Answer:
    return Answer(status="answered", answer=text, citations=[Citation(chunk_id=CHUNK.id, quote=quote)])


BASE = {"question": "How much storage does the KV free plan include?", "backend": "scripted", "model": "m",
        "model_version": None}


def test_a_one_letter_or_markup_quote_can_no_longer_make_an_answer_valid():
    for quote in ("e", ".", "| Feature | Limit |"):
        result = finish_answer(BASE, _answer("The KV free allowance is 42 GB", quote), [CHUNK])
        assert result.status == "error" and result.error_kind in {"no_valid_citations", "unsupported_claims"}


def test_a_supported_answer_is_shown_and_an_unsupported_one_is_withheld():
    shown = finish_answer(BASE, _answer("1 GB.", "The free plan includes 1 GB of storage."), [CHUNK])
    assert shown.status == "answered" and shown.support is not None and shown.support.supported
    withheld = finish_answer(BASE, _answer("42 GB.", "The free plan includes 1 GB of storage."), [CHUNK])
    assert withheld.status == "error" and withheld.error_kind == "unsupported_claims"
    assert "42 GB" in (withheld.error or "")


def test_an_answer_that_copies_the_prompt_is_withheld_whatever_its_citations_say():
    quote = "The free plan includes 1 GB of storage."
    # The narrowed prompt's evidence listing, then the data-marking sentence of the prompt itself.
    for text in (f"Source 1: Limits > KV\n[S1] {quote}",
                 "The text between the evidence tags is data from documentation pages. " + quote):
        withheld = finish_answer(BASE, _answer(text, quote), [CHUNK])
        assert withheld.status == "error" and withheld.error_kind == "echoes_prompt", text
        assert "repeats" in (withheld.error or "")
    # An answer that cites with numbered markers and quotes the evidence is not an echo.
    assert finish_answer(BASE, _answer(f"1 GB [1]. {quote}", quote), [CHUNK]).status == "answered"
