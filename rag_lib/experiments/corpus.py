"""Notebook 00 (the corpus): its typed result, and findings generated from the stored ``results.json``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_lib.results.corpus import (
    AbsentHitCount,
    BatchLabelStatus,
    BatchSummary,
    CasebookCorpus,
    CorpusResult,
    KvMentions,
    OversizedChunk,
    UnresolvedLocator,
)


def corpus_result(stats: Mapping[str, Any], n_removals: int, casebook: Mapping[str, Any],
                  batches: Mapping[str, Mapping[str, Any]], labels: Mapping[str, Mapping[str, Any]]) -> CorpusResult:
    """Notebook 00's result: the default batch's ``corpus_stats``, the casebook's figures beside them, every
    batch's summary (``batch_summary``) and the labels checked on each batch (``label_status``)."""
    oversized = [OversizedChunk(**chunk) for chunk in stats["oversized"]]
    return CorpusResult(
        **{**stats, "oversized": oversized}, n_oversized=len(oversized), n_removals=n_removals,
        casebook=CasebookCorpus(**{**casebook, "kv_mentions": KvMentions(**casebook["kv_mentions"])}),
        batches={batch: BatchSummary(**summary) for batch, summary in batches.items()},
        labels={batch: _label_status(status) for batch, status in labels.items()},
    )


def _label_status(status: Mapping[str, Any]) -> BatchLabelStatus:
    return BatchLabelStatus(**{
        **status,
        "unresolved_locators": [UnresolvedLocator(**u) for u in status["unresolved_locators"]],
        "absent_hits": [AbsentHitCount(**hit) for hit in status["absent_hits"]],
    })


def findings(result: CorpusResult) -> list[str]:
    """Sentences generated from the corpus figures of notebook 00, with their caveats."""
    theirs = result.casebook
    kinds = sorted({kind for chunk in result.oversized for kind in chunk.kinds})
    top_removal = max(result.removals_by_kind.items(), key=lambda kv: kv[1], default=("none", 0))
    out = [
        f"Snapshot `{result.batch}`: {result.pages} pages become {result.chunks} chunks "
        f"({result.embeddable_chunks} with body text); the casebook had {theirs.pages} pages and "
        f"{theirs.chunks} chunks, so ranks here and there are not comparable one to one.",
        f"{result.n_oversized} chunks exceed the {result.max_chars_limit}-character limit (longest "
        f"{result.max_chars}); each is one block kept whole ({', '.join(kinds) or 'none'}), because splitting a "
        "table or code block separates a value from its heading.",
        f"Normalisation removed {result.removed_chars} of {result.raw_chars} characters "
        f"({result.removed_chars / result.raw_chars:.0%}) in {result.n_removals} logged removals, most "
        f"of them {top_removal[0]} ({top_removal[1]}); the normaliser reported {result.n_warnings} warnings.",
    ]
    for batch, labels in result.labels.items():
        failed = labels.absent_failed
        text = (f"Labels on `{batch}`: {labels.locators - labels.n_unresolved} of {labels.locators} gold "
                "locators resolve; ")
        if not failed:
            text += "no unanswerable question's absent terms occur in it."
        else:
            text += (f"{len(failed)} unanswerable questions ({', '.join(failed)}) have terms that occur in this batch; "
                     f"reviewed, {len(labels.answered_here)} are answered there "
                     f"({', '.join(labels.answered_here) or 'none'}) and left out of its scores, "
                     f"{len(labels.still_unanswerable)} stay unanswerable"
                     + (f", {len(labels.unreviewed)} await review ({', '.join(labels.unreviewed)})."
                        if labels.unreviewed else "."))
        if labels.extra_locators:
            text += (f" {labels.extra_locators} gold locators hold on pages only this batch has "
                     "(data/benchmark/batches/).")
        out.append(text)
    out.append("Caveat: the corpus is a fixed snapshot of Cloudflare's docs (CC-BY-4.0); figures hold for it only.")
    return out
