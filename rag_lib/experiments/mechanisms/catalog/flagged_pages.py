"""Pages the corpus import flagged (tables of contents, indexes: mostly links) moved to the end of the dense
ranking: what the parser warnings of ``python -m rag_lib corpus import`` are worth to retrieval."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.corpus.importer import page_warnings
from rag_lib.experiments.mechanisms.registry import BaselineDense, BuildContext, Variant, mechanism
from rag_lib.pipeline.workbench import Workbench
from rag_lib.retrieval import Ranking

VARIANT = "flagged pages last"


def flagged_page_variants(wb: Workbench, base: BaselineDense, checks: Sequence[str]) -> tuple[list[Variant], str]:
    """One variant: every chunk of a page flagged by any of ``checks`` moved below the rest, order kept. Also the
    reason when there is nothing to move (a batch that was never imported has no warnings)."""
    flagged = {slug for slug, found in page_warnings(wb.batch).items() if set(found) & set(checks)}
    if not flagged:
        return [], (f"the batch {wb.batch} has no page flagged {', '.join(checks)} (only an imported corpus has "
                    "parser warnings)")
    moved = {c.id for c in wb.embeddable if c.page in flagged}

    def rank(text: str) -> Ranking:
        ranking = base(text)
        kept = [i for i, cid in enumerate(ranking.ids) if cid not in moved]
        last = [i for i, cid in enumerate(ranking.ids) if cid in moved]
        return Ranking(tuple(ranking.ids[i] for i in kept + last), tuple(ranking.scores[i] for i in kept + last),
                       source=f"flagged-last({ranking.source})", demoted=tuple(ranking.ids[i] for i in last))

    return [Variant(VARIANT, f"the {len(flagged)} pages the import flagged {', '.join(checks)} "
                    f"({len(moved)} chunks) moved below every other chunk", rank)], ""


@mechanism("flagged_pages", "pages the corpus import flagged as lists of links moved to the end of the dense ranking",
           casebook=False, checks=("list_page",))  # the casebook's MDX batches were never imported: no warnings
def _flagged_pages(ctx: BuildContext, checks: Sequence[str]) -> tuple[list[Variant], dict[str, str]]:
    variants, reason = flagged_page_variants(ctx.wb, ctx.base, checks)
    return variants, ({VARIANT: reason} if reason else {})
