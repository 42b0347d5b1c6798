"""Every other available embedder, dense, in place of the default."""

from __future__ import annotations

from rag_lib.embedding import available_embedders
from rag_lib.experiments.mechanisms.registry import BuildContext, Variant, mechanism
from rag_lib.pipeline.workbench import RunKey, Workbench
from rag_lib.results.mechanism import RetrieverVariant


def embedding_variants(wb: Workbench, status: dict[str, bool | str]) -> list[Variant]:
    """Every other available embedder, dense, in place of the default."""
    default = wb.config.embedder
    out = []
    for name, ok in status.items():
        if ok is True and name != default:
            key = RunKey("dense", name)
            # Ranked lazily: building the retriever embeds the whole corpus, which a caller may skip the variant for.
            out.append(Variant(f"dense:{name}", f"dense retrieval with {name} instead of {default}",
                               lambda text, key=key: wb.rank(text, key),
                               provenance=RetrieverVariant(**wb.provenance(key))))
    return out


@mechanism("embedding", "every other available embedder in place of the default")
def _embedding(ctx: BuildContext) -> tuple[list[Variant], dict[str, str]]:
    status = available_embedders()
    return embedding_variants(ctx.wb, status), {name: str(ok) for name, ok in status.items() if ok is not True}
