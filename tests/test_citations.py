"""Citation check: ids must have been sent, quotes must be verbatim (whitespace aside) in that chunk."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag_lib.core.documents import Chunk
from rag_lib.generation.citations import check_citations, deep_link, find_quote, normalize_whitespace, text_fragment

PAGE = (
    "## Add secrets\n\n"
    "Run `wrangler secret put <KEY>` to add a secret.\n"
    "It creates a new version and deploys it immediately.\n\n"
    "## Local development\n\n"
    "Put local secrets in a .dev.vars file."
)
URL = "https://developers.cloudflare.com/workers/configuration/secrets/"


def _chunk(ordinal: int, heading: str) -> Chunk:
    start = PAGE.index(f"## {heading}")
    end = PAGE.find("\n\n## ", start + 1)
    end = len(PAGE) if end < 0 else end
    slug = heading.lower().replace(" ", "-")
    return Chunk(
        id=f"secrets-{ordinal:03d}-{slug}", page="workers/configuration/secrets", ordinal=ordinal,
        title="Secrets", heading_path=(heading,), text=PAGE[start:end], start=start, end=end,
        url=f"{URL}#{slug}", embeddable=True, oversized=False,
    )


A = _chunk(0, "Add secrets")
B = _chunk(1, "Local development")
EVIDENCE = [A, B]


def test_chunks_are_spans_of_the_page() -> None:
    assert PAGE[A.start:A.end] == A.text and PAGE[B.start:B.end] == B.text


def test_verbatim_quote_is_valid_with_offsets_and_deep_link() -> None:
    quote = "Put local secrets in a .dev.vars file."
    report = check_citations([{"chunk_id": B.id, "quote": quote}], EVIDENCE)
    (checked,) = report.checked
    assert checked.valid and checked.reason is None
    assert (checked.page_start, checked.page_end) == (PAGE.index(quote), PAGE.index(quote) + len(quote))
    assert checked.deep_link == URL + "#:~:text=Put%20local%20secrets%20in%20a%20.dev.vars%20file."
    assert report.validity == 1.0


def test_whitespace_differences_are_accepted_and_offsets_cover_the_original_text() -> None:
    quote = "to add a   secret. It creates\ta new version"  # the source has a line break after "secret."
    (checked,) = check_citations([{"chunk_id": A.id, "quote": quote}], EVIDENCE).checked
    assert checked.valid
    span = PAGE[checked.page_start:checked.page_end]
    assert span == "to add a secret.\nIt creates a new version"
    assert normalize_whitespace(span) == normalize_whitespace(quote)


def test_fabricated_id_is_dropped_as_unknown() -> None:
    report = check_citations([{"chunk_id": "secrets-007-made-up", "quote": "Run"}], EVIDENCE)
    assert report.checked[0].reason == "unknown_id" and report.n_valid == 0 and report.validity == 0.0


def test_altered_quote_is_dropped() -> None:
    report = check_citations([{"chunk_id": A.id, "quote": "It creates a new version and deploys it later."}], EVIDENCE)
    assert report.checked[0].reason == "quote_not_found"


def test_quote_spanning_two_chunks_is_rejected_under_either_id() -> None:
    quote = "deploys it immediately. Local development Put local secrets"
    report = check_citations([{"chunk_id": A.id, "quote": quote}, {"chunk_id": B.id, "quote": quote}], EVIDENCE)
    assert [c.reason for c in report.checked] == ["quote_not_found", "quote_not_found"]


def test_quote_from_the_other_chunk_is_rejected() -> None:
    report = check_citations([{"chunk_id": A.id, "quote": "Put local secrets in a .dev.vars file."}], EVIDENCE)
    assert report.checked[0].reason == "quote_not_found"


@pytest.mark.parametrize(("chunk_id", "quote"), [(A.id, ""), (A.id, "  \n "), ("", "Run")])
def test_empty_id_or_quote(chunk_id: str, quote: str) -> None:
    assert check_citations([{"chunk_id": chunk_id, "quote": quote}], EVIDENCE).checked[0].reason == "empty"


def test_report_counts_valid_over_total_and_reasons() -> None:
    cited = [
        {"chunk_id": A.id, "quote": "Run `wrangler secret put <KEY>` to add a secret."},
        {"chunk_id": B.id, "quote": "Put local secrets"},  # verbatim, but a fragment of a sentence: partial
        {"chunk_id": "nope", "quote": "Run"},
        {"chunk_id": A.id, "quote": "Run wrangler secret put"},  # backticks dropped: not verbatim
        {"chunk_id": B.id, "quote": ""},
    ]
    report = check_citations(cited, EVIDENCE)
    assert (report.n_valid, report.n_total, report.validity) == (1, 5, 0.2)
    assert report.dropped_by_reason == {"unknown_id": 1, "quote_not_found": 1, "empty": 1, "fragment": 0,
                                        "markup": 0, "partial": 1, "flagged": 0}
    assert report.to_json()["citations"][0]["deep_link"].startswith(URL + "#:~:text=Run%20wrangler")


def test_no_citations_has_no_validity_ratio() -> None:
    report = check_citations([], EVIDENCE)
    assert (report.n_total, report.validity) == (0, None)


def test_text_fragment_encodes_directive_syntax_and_shortens_long_quotes() -> None:
    assert text_fragment("a-b, c&d") == "#:~:text=a%2Db%2C%20c%26d"
    long = "one two three four five six seven eight nine ten"
    assert text_fragment(long) == "#:~:text=one%20two%20three%20four,seven%20eight%20nine%20ten"
    assert deep_link(A, "**Deploy**") == URL + "#:~:text=Deploy"


def test_find_quote_returns_none_for_whitespace_only() -> None:
    assert find_quote("   ", "text") is None
    assert find_quote("b  c", "a b\nc d") == (2, 5)


@given(
    words=st.lists(st.text(alphabet="abcdefgh.,-`*中文", min_size=1, max_size=6), min_size=3, max_size=12),
    data=st.data(),
)
def test_any_span_of_a_chunk_is_found_despite_whitespace_changes(words: list[str], data: st.DataObject) -> None:
    separators = data.draw(st.lists(st.sampled_from([" ", "\n", "  ", "\t"]), min_size=len(words) - 1,
                                    max_size=len(words) - 1))
    text = words[0] + "".join(sep + word for sep, word in zip(separators, words[1:], strict=True))
    i = data.draw(st.integers(0, len(words) - 1))
    j = data.draw(st.integers(i + 1, len(words)))
    quote = "   ".join(words[i:j])  # same words, different whitespace
    span = find_quote(quote, text)
    assert span is not None and normalize_whitespace(text[span[0]:span[1]]) == normalize_whitespace(quote)
