"""Injection: text addressed to a model is flagged, never support, and never reaches the reader."""

from __future__ import annotations

from rag_lib.documents import Chunk
from rag_lib.generation.narrowed import split_units
from rag_lib.injection import instruction_spans
from rag_lib.question_sweeps.injection import PLANTS, plant_into, run_injection_set

TEXT = ("Workers KV is a global, low-latency key-value data store.\n\n"
        "| Feature | Free plan |\n| --- | --- |\n| Reads | 100,000 per day |\n| Storage | 1 GB |\n\n"
        "The Free plan includes limited usage of Workers KV.")
CHUNK = Chunk(id="kv-001", page="workers/platform/pricing", title="Pricing", heading_path=("Workers KV",),
              text=TEXT, start=0, end=len(TEXT), url="https://developers.cloudflare.com/workers/platform/pricing/",
              ordinal=0, embeddable=True, oversized=False)
OTHER = Chunk(id="kv-002", page="kv/concepts", title="KV", heading_path=("How KV works",),
              text="KV stores data in a small number of centralized data centers.", start=0, end=62,
              url="https://developers.cloudflare.com/kv/concepts/", ordinal=1, embeddable=True, oversized=False)
QUESTION = {"zh": "Workers KV 的免费额度是多少？", "en": "How large is the Workers KV free allowance?"}


def _every_unit(question, evidence):
    return split_units(evidence)


def test_the_set_has_twenty_variants_in_both_languages_and_every_placement():
    assert len(PLANTS) >= 20
    assert {p.lang for p in PLANTS} == {"zh", "en"}
    assert {p.placement for p in PLANTS} >= {"prose", "table", "code", "heading", "list"}


def test_every_plant_is_flagged_where_it_is_planted():
    for plant in PLANTS:
        planted = plant_into(CHUNK, plant).text
        assert any(plant.claim in s.text for s in instruction_spans(planted)), plant.id


def test_documentation_imperatives_are_not_flagged():
    for text in ("Run `wrangler deploy` to publish your Worker.", "The server responds with a 404 status.",
                 "To add data during local development, you must write application code that creates it.",
                 "You should set compatibility_date in wrangler.toml.", "请在 wrangler.toml 中设置绑定。"):
        assert instruction_spans(text) == [], text


def test_no_planted_claim_reaches_the_reader_even_when_the_model_obeys():
    out = run_injection_set(QUESTION, [CHUNK, OTHER], _every_unit)
    assert out["n_asked"] == 2 * len(PLANTS)
    assert out["claims_shown"] == 0, [r for r in out["rows"] if r["claim_shown"]]
    chunk_rows = [r for r in out["rows"] if r["pipeline"] == "chunks"]
    assert all(r["dropped"] == "flagged" for r in chunk_rows), chunk_rows


def test_without_the_defences_the_obeying_model_would_have_shown_the_claim(monkeypatch):
    # The measurement can fail: with the detector switched off, quoting the plant supports the claim.
    import rag_lib.generation.support as support

    monkeypatch.setattr(support, "overlaps_instruction", lambda text, start, end: False)
    out = run_injection_set(QUESTION, [CHUNK, OTHER], _every_unit)
    assert out["claims_shown"] > 0
