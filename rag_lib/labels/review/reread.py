"""Labels v4 (issue 46, item 4): a blind re-read of the not-gold decisions the key-fact rule made that may be gold.

Labels v3 decided most pooled candidates by a string rule: a chunk stating none, or only some, of a piece's key
facts is not gold for it. The blind second pass found gold pairs that rule refused (a chunk stating the piece in
other words). This selects every such decision whose chunk comes close to the piece by a stated rule, and writes
them as a blind sheet (the chunk items of :mod:`rag_lib.labels.review.sheet`: question, pieces, chunk; never the
decision or its reason) for readers who judge each item without the first decision:

- the rule's reason says **partial**: the chunk states some of the piece's key facts, not all;
- or the chunk holds at least :data:`MIN_PHRASE_SHARE` of the content words (longer than two characters) of some
  locator phrase of the question (the sentence a gold chunk of the piece holds).

Items are listed in draw order (``sha256(seed|chunk|key)``, the blind pass's hash), which is random.

After the re-read, :func:`missed_sample` draws a fresh seeded sample of the other not-gold pairs (none of them
re-read), for blind readers too: the share they call gold estimates the gold still missing from the labels.

    python -m rag_lib.labels.review reread     # writes data/benchmark/reread_v4/sheet.yaml
    python -m rag_lib.labels.review missed     # writes data/benchmark/reread_v4/missed_sheet.yaml
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from rag_lib.core.config import BENCHMARK_DIR
from rag_lib.evaluation.readers import REREAD_DIR, NewGold, load_judgments, majority_gold, missed_gold
from rag_lib.labels.review.decisions import LabelDecision, draw_hash
from rag_lib.labels.review.review import cohen_kappa
from rag_lib.labels.review.sheet import INSTRUCTIONS

REREAD_SHEET_PATH = REREAD_DIR / "sheet.yaml"
POLICY_PATH = REREAD_DIR / "policy.yaml"  # decisions made by applying a stated policy, not by the readers
MISSED_SHEET_PATH = REREAD_DIR / "missed_sheet.yaml"
MISSED_SEED = 20261205
MISSED_SAMPLE = 150
MIN_PHRASE_SHARE = 0.75
RULE_PREFIX = "about "  # how a key-fact-rule reason starts in pool_decisions.yaml (a hand-read one does not)


def rule_reasons(pool_decisions: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """(question, chunk) → the key-fact rule's reason, for every not-gold decision the rule made."""
    return {(d["question"], d["chunk"]): d["reason"] for d in pool_decisions
            if d["decision"] == "not_gold" and str(d.get("reason", "")).startswith(RULE_PREFIX)}


def locator_phrases(*locator_lists: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Question id → its locators' phrases (questions.yaml's pieces and a batch file's extra locators)."""
    out: dict[str, list[str]] = {}
    for locators in locator_lists:
        for loc in locators:
            if loc.get("phrase"):
                out.setdefault(loc["question"], []).append(loc["phrase"])
    return out


def _terms(text: str) -> frozenset[str]:
    from rag_lib.retrieval.tokenize import content_terms  # jieba: loaded on use

    return frozenset(t for t in content_terms(text) if len(t) > 2)


def phrase_share(text: str, phrases: Sequence[str]) -> float:
    """The largest share of a phrase's content words that ``text`` holds (0 for no phrase of three or more)."""
    held = _terms(text)
    shares = [len(words & held) / len(words) for words in map(_terms, phrases) if len(words) >= 3]
    return max(shares, default=0.0)


def candidates(decisions: Iterable[LabelDecision], reasons: Mapping[tuple[str, str], str],
               phrases: Mapping[str, Sequence[str]]) -> list[tuple[LabelDecision, str]]:
    """The chunk decisions to re-read, each with why it was selected (``partial`` or ``phrase``)."""
    out = []
    for d in decisions:
        if d.kind != "chunk" or d.first != "not_gold":
            continue
        question, chunk = d.key.split("|", 1)
        reason = reasons.get((question, chunk))
        if reason is None:
            continue
        if "partial" in reason:
            out.append((d, "partial"))
        elif phrase_share(d.show["text"], phrases.get(question, [])) >= MIN_PHRASE_SHARE:
            out.append((d, "phrase"))
    return sorted(out, key=lambda pair: (draw_hash(pair[0].kind, pair[0].key), pair[0].key))


def reread_sheet(selected: Sequence[tuple[LabelDecision, str]]) -> dict[str, Any]:
    """The blind sheet of the re-read: the chunk items' context only, in draw order."""
    items = [{"id": f"r{i:03d}", "kind": "chunk", "ref": d.ref, **d.show} for i, (d, _) in enumerate(selected, 1)]
    return {
        "how": "python -m rag_lib.labels.review reread; each reader judges every item into their own file, by id",
        "selection": f"not-gold decisions of the key-fact rule (pool_decisions.yaml) whose chunk states some of a "
                     f"piece's key facts (partial) or holds at least {MIN_PHRASE_SHARE:.0%} of the content words of "
                     f"a locator phrase of the question; {sum(w == 'partial' for _, w in selected)} partial, "
                     f"{sum(w == 'phrase' for _, w in selected)} by phrase",
        "instructions": {"chunk": INSTRUCTIONS["chunk"]},
        "items": items,
    }


def missed_sample(decisions: Iterable[LabelDecision], reread: Iterable[LabelDecision], n: int = MISSED_SAMPLE,
                  seed: int = MISSED_SEED) -> tuple[list[LabelDecision], int]:
    """A seeded draw of ``n`` not-gold chunk pairs outside the re-read (``reread``), and how many there are."""
    skip = {d.key for d in reread}
    rest = [d for d in decisions if d.kind == "chunk" and d.first == "not_gold" and d.key not in skip]
    drawn = sorted(rest, key=lambda d: (draw_hash(d.kind, d.key, seed), d.key))[:n]
    return drawn, len(rest)


def missed_sheet(drawn: Sequence[LabelDecision], population: int, seed: int = MISSED_SEED) -> dict[str, Any]:
    """The blind sheet of the missed-gold sample (ids ``m001`` …), in draw order."""
    return {
        "how": "python -m rag_lib.labels.review missed; each reader judges every item into their own file, by id",
        "selection": f"{len(drawn)} of the {population} not-gold chunk pairs not re-read, drawn by "
                     f"sha256({seed}|chunk|key)",
        "population": population,
        "instructions": {"chunk": INSTRUCTIONS["chunk"]},
        "items": [{"id": f"m{i:03d}", "kind": "chunk", "ref": d.ref, **d.show} for i, d in enumerate(drawn, 1)],
    }


def load_selection_inputs() -> tuple[dict[tuple[str, str], str], dict[str, list[str]]]:
    """The rule's reasons and the questions' locator phrases, from the files as they are now."""
    pool = yaml.safe_load((BENCHMARK_DIR / "pool_decisions.yaml").read_text(encoding="utf-8"))["decisions"]
    questions = yaml.safe_load((BENCHMARK_DIR / "questions.yaml").read_text(encoding="utf-8"))["questions"]
    own = [{**loc, "question": q["id"]} for q in questions for p in q.get("pieces", []) for loc in p["locators"]]
    extra = [loc for path in sorted((BENCHMARK_DIR / "batches").glob("*.yaml"))
             for loc in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("locators", [])]
    return rule_reasons(pool), locator_phrases(own, extra)


def disagreements(items: Sequence[Mapping[str, Any]], first: Mapping[str, Mapping[str, Any]],
                  second: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Item ids the two readers decided differently (gold against not gold, or gold for other pieces)."""
    def call(j: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
        return j["decision"], tuple(sorted(j.get("pieces", [])))

    return [i["id"] for i in items if call(first[i["id"]]) != call(second[i["id"]])]


# ------------------------------------------------------------------------------------- applying it
def _entry_span(lines: Sequence[str], question: str, chunk: str) -> tuple[int, int] | None:
    """The lines of a decisions file's not-gold entry for (question, '*', chunk): its start and end."""
    for i, line in enumerate(lines):
        if (line == f"- question: {question}" and i + 3 < len(lines) and lines[i + 1] == "  piece: '*'"
                and lines[i + 2] == f"  chunk: {chunk}" and lines[i + 3] == "  decision: not_gold"):
            end = i + 4
            while end < len(lines) and not lines[end].startswith("- "):
                end += 1
            return i, end
    return None


def _flow(values: Mapping[str, Any]) -> str:
    """A locator as one flow mapping line, in the style of questions.yaml (ids and pages bare, texts quoted)."""
    return "{" + ", ".join(f"{k}: {v}" if k in ("question", "piece", "page") else
                           f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in values.items()) + "}"


def apply_gold(new: Sequence[NewGold], reason: Mapping[str, str], labelled_batch: str,
               folder: Path = BENCHMARK_DIR) -> list[str]:
    """Write each new gold pair into the labels: its not-gold entry (pool or audit decisions) becomes a gold
    decision for its piece, and a locator of the piece resolves to the chunk (in questions.yaml for a page of
    the labelled batch, else in the batch's file). ``reason``: item id → why, written with the decision.
    Returns what was changed, one line each."""
    done = []
    by_file: dict[Path, list[str]] = {}
    for g in new:
        for name in ("pool_decisions.yaml", "audit_decisions.yaml"):
            path = folder / name
            lines = by_file.setdefault(path, path.read_text(encoding="utf-8").split("\n"))
            span = _entry_span(lines, g.question, g.chunk)
            if span is not None:
                entry = [f"- question: {g.question}", f"  piece: {g.piece}", f"  chunk: {g.chunk}", "  decision: gold",
                         f"  reason: {json.dumps(reason[g.item], ensure_ascii=False)}"]
                lines[span[0]:span[1]] = entry
                done.append(f"{name}: {g.question} {g.piece} {g.chunk} → gold")
                break
        else:
            raise ValueError(f"{g.question} {g.chunk}: no not-gold entry for '*' in the decisions files")
        locator = {"page": g.page, "heading": list(g.heading), "phrase": g.phrase}
        if g.batch == labelled_batch:
            path = folder / "questions.yaml"
            lines = by_file.setdefault(path, path.read_text(encoding="utf-8").split("\n"))
            start = lines.index(f"- id: {g.question}")
            piece = lines.index(f"  - id: {g.piece}", start)
            at = lines.index("    locators:", piece) + 1
            while at < len(lines) and lines[at].startswith("    - {"):
                at += 1
            lines.insert(at, f"    - {_flow(locator)}")
        else:
            path = folder / "batches" / f"{g.batch}.yaml"
            lines = by_file.setdefault(path, path.read_text(encoding="utf-8").split("\n"))
            at = lines.index(next(line for line in lines if line.startswith("locators:"))) + 1
            while at < len(lines) and lines[at].startswith("  - {"):
                at += 1
            full = {"question": g.question, "piece": g.piece, **locator, "reason": reason[g.item]}
            lines.insert(at, f"  - {_flow(full)}")
        done.append(f"{path.name}: a locator of {g.question} {g.piece} on {g.page} ({g.phrase!r})")
    for path, lines in by_file.items():
        path.write_text("\n".join(lines), encoding="utf-8")
    return done


def policy_gold(path: Path = POLICY_PATH) -> tuple[list[NewGold], dict[str, str]]:
    """The gold pairs decided by a stated policy (``policy.yaml``), with their reasons."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    golds = [NewGold(d["id"], d["question"], d["piece"], d["chunk"], d["batch"], d["page"], tuple(d["heading"]),
                     d["phrase"], 0) for d in data["decisions"]]
    return golds, {d["id"]: d["reason"] for d in data["decisions"]}


def reread_report(folder: Path = REREAD_DIR) -> str:
    """The re-read's figures as its files record them: per reader, their agreement, the majority's new gold,
    the policy's, and the missed-gold estimate."""
    items = yaml.safe_load((folder / "sheet.yaml").read_text(encoding="utf-8"))["items"]
    first, second, third = (load_judgments(folder / f"reader{i}.yaml") for i in (1, 2, 3))
    ids = [i["id"] for i in items]
    differ = disagreements(items, first, second)
    kappa = cohen_kappa([first[i]["decision"] for i in ids], [second[i]["decision"] for i in ids])
    gold = majority_gold(items, [first, second, third])
    policy, _ = policy_gold(folder / "policy.yaml")
    lines = [f"re-read: {len(items)} not-gold pairs of the key-fact rule",
             *(f"reader {n}: {sum(j['decision'] == 'gold' for j in r.values())} gold of {len(r)} judged"
               for n, r in enumerate((first, second, third), 1)),
             f"readers 1 and 2 agree on {len(items) - len(differ)} of {len(items)} (Cohen's kappa on gold / not gold "
             f"{kappa:.2f}); reader 3 decided {', '.join(differ) or 'none'}",
             f"gold by a majority of at least two readers: {len(gold)} "
             f"({', '.join(f'{g.item} {g.question} {g.piece}' for g in gold)})",
             f"gold by a stated policy (policy.yaml): {len(policy)} ({', '.join(g.item for g in policy)})",
             f"missed-gold sample: {missed_gold(folder).caveat()}"]
    return "\n".join(lines)
