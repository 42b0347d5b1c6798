"""Findings of notebook 00 (the corpus), generated from its stored ``results.json``."""

from __future__ import annotations

from typing import Any


def findings(result: dict[str, Any]) -> list[str]:
    """Sentences generated from the corpus figures of notebook 00, with their caveats."""
    theirs = result["casebook"]
    kinds = sorted({kind for chunk in result["oversized"] for kind in chunk["kinds"]})
    top_removal = max(result["removals_by_kind"].items(), key=lambda kv: kv[1], default=("none", 0))
    out = [
        f"Snapshot `{result['batch']}`: {result['pages']} pages become {result['chunks']} chunks "
        f"({result['embeddable_chunks']} with body text); the casebook had {theirs['pages']} pages and "
        f"{theirs['chunks']} chunks, so ranks here and there are not comparable one to one.",
        f"{result['n_oversized']} chunks exceed the {result['max_chars_limit']}-character limit (longest "
        f"{result['max_chars']}); each is one block kept whole ({', '.join(kinds) or 'none'}), because splitting a "
        "table or code block separates a value from its heading.",
        f"Normalisation removed {result['removed_chars']} of {result['raw_chars']} characters "
        f"({result['removed_chars'] / result['raw_chars']:.0%}) in {result['n_removals']} logged removals, most "
        f"of them {top_removal[0]} ({top_removal[1]}); the normaliser reported {result['n_warnings']} warnings.",
    ]
    for batch, labels in result["labels"].items():
        failed = labels["absent_failed"]
        out.append(
            f"Labels on `{batch}`: {labels['locators'] - labels['n_unresolved']} of {labels['locators']} gold locators "
            f"resolve; " + (f"{len(failed)} unanswerable questions ({', '.join(failed)}) have terms that occur in "
                            "this batch, so they need a person's review before it is scored."
                            if failed else "no unanswerable question's absent terms occur in it."))
    out.append("Caveat: the corpus is a fixed snapshot of Cloudflare's docs (CC-BY-4.0); figures hold for it only.")
    return out
