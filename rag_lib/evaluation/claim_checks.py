"""The blind claim-by-claim hand check of shown answers (issue 44 item 6), as RAGChecker's meta-evaluation does.

Two readers judge every claim of a seeded draw of the answers the workbook *showed*, against the snapshot's
pages, seeing neither the key facts, nor the workbook's verdicts, nor each other's judgements:

- :func:`draw_sheet` writes the sheet: question, the shown answer and its claims as the verification stage
  split them (:func:`rag_lib.verification.claims_of`), nothing else;
- each reader returns, per claim, ``true`` (the pages state it), ``false`` (they contradict it or do not
  state it) or ``not_a_claim`` (an introduction, a restated question), and per answer whether it answers
  what was asked: ``complete``, ``partial`` or ``no``;
- :func:`agreement` gives the precision of "shown" (answers whose every claim both readers accept), with
  Wilson intervals per language, the readers' Cohen's kappa on claims (the ceiling a measure can reach),
  and the key-fact measure's precision and recall against answers both readers call true and complete.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_lib.core.config import REPO_ROOT
from rag_lib.core.text import as_prose
from rag_lib.evaluation.hand_check_agreement import cohen_kappa
from rag_lib.evaluation.stats import count_text, wilson_text
from rag_lib.verification import ANSWER_MIN_TERMS, claims_of, off_question

CLAIM_VERDICTS = ("true", "false", "not_a_claim")
ANSWER_VERDICTS = ("complete", "partial", "no")
SHEET_RUN = "ungated"  # every question answered, so the draw is not shaped by a gate
LINE_CLAIMS = {"claims"}  # generators whose shown answer is its claims, one per line


def draw_sheet(results: Mapping[str, Any], questions: Mapping[tuple[str, str], str], *, seed: int = 0,
               generator: str = "narrowed", at_least: int = 80, per_language: int | None = None,
               languages: Sequence[str] = ("zh", "en")) -> list[dict[str, Any]]:
    """Every shown answer of ``generator`` in a seeded order, as the readers see them.

    ``questions`` maps ``(lang, id)`` to the question's text. All shown answers are drawn when there are
    fewer than ``at_least``. With ``per_language``, each language is drawn on its own (seeded by seed and
    language, so one language's draw does not depend on the other's answers): a sheet can be judged one
    language at a time and grow by the next without changing what was drawn.
    """
    def shown(lang: str) -> list[tuple[str, Any]]:
        rows = results["answers"][generator]["runs"][f"{lang}:{SHEET_RUN}"]["rows"]
        return [(lang, row) for row in rows if row["status"] == "answered"]

    if per_language is None:
        pool = [pair for lang in languages for pair in shown(lang)]
        random.Random(seed).shuffle(pool)
        drawn = pool if len(pool) <= at_least else pool[:at_least]
    else:
        drawn = []
        for lang in languages:
            pool = shown(lang)
            random.Random(f"{seed}:{lang}").shuffle(pool)
            drawn += pool[:per_language]
    return [{"id": f"{lang}:{row['question']}", "question": questions[(lang, row["question"])],
             "answer": row["answer"], "claims": [{"n": n, "claim": claim} for n, claim in
                                                 enumerate(answer_claims(row["answer"], generator), start=1)]}
            for lang, row in drawn]


def answer_claims(answer: str, generator: str) -> list[str]:
    """The claims of a shown answer as its pipeline made them: the claims pipeline shows one claim per line (the
    model wrote them apart); the others' claims are the verification stage's split of the text."""
    if generator in LINE_CLAIMS:
        return [line.strip() for line in answer.split("\n") if line.strip()]
    return claims_of(answer)


@dataclass(frozen=True)
class ClaimAgreement:
    """What the two readers' judgements say about the shown answers and about the key-fact measure."""

    by_language: dict[str, tuple[int, int]]  # lang → (accepted by both readers: every claim true, shown)
    # lang → (every claim accepted and both readers say it answers what was asked, completely or in part; shown)
    answering_by_language: dict[str, tuple[int, int]]
    kappa_claims: float  # the readers' agreement on true/false per claim
    claims_judged: int
    keyfact_precision: tuple[int, int]  # "correct" by key facts that both readers call true and complete
    keyfact_recall: tuple[int, int]  # true-and-complete answers (both readers) the key-fact measure calls correct

    def accepted_text(self, languages: Sequence[str]) -> str:
        """Per language (in ``languages``' order), the shown answers whose every claim both readers accept:
        "zh 26/26 [0.87, 1.00]; en …"."""
        return "; ".join(f"{lang} {count_text(*self.by_language[lang])}" for lang in languages
                         if lang in self.by_language)

    def answering_text(self, languages: Sequence[str]) -> str:
        """Per language, those of them that also answer what was asked (both readers)."""
        return "; ".join(f"{lang} {count_text(*self.answering_by_language[lang])}" for lang in languages
                         if lang in self.by_language)

    def keyfact_text(self) -> str:
        """The key-fact measure against the readers' "true and complete": "precision 8/11 [..] and recall …"."""
        return f"precision {count_text(*self.keyfact_precision)} and recall {count_text(*self.keyfact_recall)}"

    def lines(self) -> list[str]:
        """The figures as sentences, each with its denominator and Wilson 95% interval."""
        def rate(pair: tuple[int, int]) -> str:
            return f"{pair[0]}/{pair[1]} = {pair[0] / pair[1]:.2f} {wilson_text(*pair)}" if pair[1] else "0/0"

        out = [f"precision of shown ({lang}): {rate(pair)} of shown answers have every claim accepted by both "
               f"readers; {rate(self.answering_by_language[lang])} also answer what was asked (both readers: "
               "complete or partial)" for lang, pair in self.by_language.items()]
        out.append(f"readers' agreement on {self.claims_judged} claims: Cohen's kappa {self.kappa_claims:.2f}")
        out.append(f"key-fact measure against the readers (true and complete): precision "
                   f"{rate(self.keyfact_precision)}, recall {rate(self.keyfact_recall)}")
        return out


def verdict(value: Any) -> str:
    """A claim verdict as the readers wrote it (YAML reads a bare ``true`` / ``false`` as a boolean)."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if text not in CLAIM_VERDICTS:
        raise ValueError(f"claim verdict {value!r} is none of {', '.join(CLAIM_VERDICTS)}")
    return text


def _accepts(judged: Mapping[str, Any]) -> bool:
    """Whether a reader accepts every claim of an answer (a claim that is no claim is left out)."""
    return all(verdict(v) != "false" for v in judged["claims"].values())


def agreement(sheet: Sequence[Mapping[str, Any]], first: Mapping[str, Mapping[str, Any]],
              second: Mapping[str, Mapping[str, Any]], correct: Mapping[str, bool | None]) -> ClaimAgreement:
    """Compare two readers' judgements (answer id → ``{"claims": {n: verdict}, "answers": verdict}``) and the
    key-fact measure's ``correct`` (answer id → bool, ``None`` when it cannot judge)."""
    table: dict[tuple[bool, bool], int] = {}
    shown: dict[str, list[int]] = {}
    answering: dict[str, int] = {}
    hits = misses = false_alarms = 0
    for entry in sheet:
        a, b = first[entry["id"]], second[entry["id"]]
        for n in a["claims"]:
            pair = (verdict(a["claims"][n]), verdict(b["claims"][n]))
            if "not_a_claim" not in pair:
                key = (pair[0] == "true", pair[1] == "true")
                table[key] = table.get(key, 0) + 1
        lang = entry["id"].split(":", 1)[0]
        counts = shown.setdefault(lang, [0, 0])
        accepted = _accepts(a) and _accepts(b)
        counts[0] += accepted
        counts[1] += 1
        answering[lang] = answering.get(lang, 0) + (accepted and _answers(a) and _answers(b))
        good = accepted and a["answers"] == b["answers"] == "complete"
        measured = correct.get(entry["id"])
        if measured is None:
            continue
        hits += measured and good
        false_alarms += measured and not good
        misses += good and not measured
    return ClaimAgreement({lang: (c[0], c[1]) for lang, c in shown.items()},
                          {lang: (answering[lang], c[1]) for lang, c in shown.items()}, round(cohen_kappa(table), 3),
                          sum(table.values()), (hits, hits + false_alarms), (hits, hits + misses))


def _answers(judged: Mapping[str, Any]) -> bool:
    """Whether a reader says an answer answers what was asked (completely or in part)."""
    if judged["answers"] not in ANSWER_VERDICTS:
        raise ValueError(f"answer verdict {judged['answers']!r} is none of {', '.join(ANSWER_VERDICTS)}")
    return judged["answers"] != "no"


@dataclass(frozen=True)
class AskedRow:
    """How the off-question check (:class:`rag_lib.verification.AskedCheck`) at one least share of named terms
    sorts hand-checked answers: those both readers say answer the question (completely or in part) and those both
    say do not. At ``min_share`` 0 only the asked-quantity rule acts."""

    lang: str
    min_share: float
    answering_shown: int
    answering: int
    off_shown: int
    off: int


def shown_as_judged(row: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
    """The pipeline still shows the answer the readers judged: the same text, as prose (they read it with its
    Markdown links and bold, which the page no longer shows)."""
    return row["status"] == "answered" and row["answer"] == as_prose(entry["answer"])


def asked_rows(sheet: Sequence[Mapping[str, Any]], first: Mapping[str, Mapping[str, Any]],
               second: Mapping[str, Mapping[str, Any]], rows: Mapping[str, Mapping[str, Any]],
               shares: Sequence[float] = (0.0, 0.25, ANSWER_MIN_TERMS, 0.75, 1.0)) -> list[AskedRow]:
    """The off-question check against the readers' ``answers`` verdicts, at each least share of the question's
    terms the quotes must name. ``rows`` are the pipeline's stored rows ("lang:question" → ``status``, ``answer``,
    ``error_kind``, ``kind_unmet``, ``terms_named``, ``terms_asked``); an answer counts when the pipeline still
    reaches the check with it (shown as judged, or withheld as off the question); readers who disagree on
    whether it answers leave it out."""
    counts: dict[tuple[str, float], list[int]] = {}
    for entry in sheet:
        row = rows[entry["id"]]
        reached = shown_as_judged(row, entry) or row["error_kind"] == "off_question"
        a, b = first[entry["id"]], second[entry["id"]]
        if not reached or _answers(a) != _answers(b):
            continue
        for share in shares:
            shown = not off_question(row["kind_unmet"], row["terms_named"], row["terms_asked"], share)
            if share == ANSWER_MIN_TERMS and shown != (row["status"] == "answered"):
                raise ValueError(f"{entry['id']}: the stored row's terms ({row['terms_named']} of "
                                 f"{row['terms_asked']}) disagree with its status {row['status']}; re-run the "
                                 "experiment that wrote it")
            c = counts.setdefault((entry["id"].split(":", 1)[0], share), [0, 0, 0, 0])
            c[0 if _answers(a) else 2] += shown
            c[1 if _answers(a) else 3] += 1
    return [AskedRow(lang, share, *c) for (lang, share), c in counts.items()]


CHECKS_DIR = REPO_ROOT / "data" / "claim_checks"
LEFT_OUT = ("zh:a44",)  # its verdict was written into both readers' instructions as the format's example
# Each committed hand check: the generator whose shown answers it judged, its folder, answers not judged blind.
TEST_SET_CHECK = CHECKS_DIR / "test_set_claims"  # the claims pipeline on the sealed test set (notebook 14)
CHECKS: dict[str, tuple[str, Path, tuple[str, ...]]] = {
    "narrowed": ("narrowed", CHECKS_DIR, LEFT_OUT),
    "claims": ("claims", CHECKS_DIR / "claims_v4", ()),
}


@dataclass(frozen=True)
class ClaimCheck:
    """The committed claim check against one run's narrowed answers: how many drawn answers are still shown as
    judged (a later rule may withhold one), and the agreement over them."""

    drawn: int
    compared: int
    left_out: list[str]
    agreement: ClaimAgreement
    asked: list[AskedRow]  # the off-question check against the readers' "does it answer" verdicts


def claim_check(rows: Mapping[str, Mapping[str, Any]], folder: Path | None = None,
                left_out: Sequence[str] = LEFT_OUT) -> ClaimCheck:
    """The readers' judgements in ``folder`` (default ``data/claim_checks``: the narrowed pipeline's) against its
    pipeline's ungated ``rows`` ("lang:question" → a stored answer row: ``status``, ``answer``, ``correct``);
    ``left_out``: answers that were not judged blind."""
    import yaml

    folder = folder or CHECKS_DIR
    sheet = yaml.safe_load((folder / "sheet.yaml").read_text(encoding="utf-8"))["answers"]
    readers = [yaml.safe_load((folder / f"reader_{r}.yaml").read_text(encoding="utf-8"))["answers"]
               for r in ("a", "b")]
    # Judged answers the pipeline still shows with the same text; a later rule that withholds one takes it out.
    still = [entry for entry in sheet if entry["id"] not in left_out and shown_as_judged(rows[entry["id"]], entry)]
    correct = {key: row["correct"] for key, row in rows.items()}
    blind = [entry for entry in sheet if entry["id"] not in left_out]
    return ClaimCheck(len(sheet), len(still), list(left_out), agreement(still, *readers, correct),
                      asked_rows(blind, *readers, rows))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rag_lib.evaluation.claim_checks``: the agreement figures of ``data/claim_checks/``."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m rag_lib.evaluation.claim_checks", description=main.__doc__)
    parser.add_argument("--results", required=True, help="the results.json whose answers were drawn (notebook 10's)")
    parser.add_argument("--check", choices=sorted(CHECKS), default="narrowed",
                        help="which hand check: narrowed (data/claim_checks) or claims (data/claim_checks/claims_v4)")
    args = parser.parse_args(argv)
    results = json.loads(Path(args.results).read_text(encoding="utf-8"))
    generator, folder, left_out = CHECKS[args.check]
    rows = {f"{lang}:{row['question']}": row for lang in ("zh", "en")
            for row in results["answers"][generator]["runs"][f"{lang}:{SHEET_RUN}"]["rows"]}
    check = claim_check(rows, folder, left_out)
    print(f"{check.compared} of {check.drawn} drawn answers ({', '.join(check.left_out) or 'none'} left out: not "
          f"blind; {check.drawn - len(check.left_out) - check.compared} no longer shown as judged)")
    for line in check.agreement.lines():
        print(line)
    print("off-question check against the readers (answers they say answer the question / do not, still shown):")
    for row in check.asked:
        print(f"  {row.lang} least share {row.min_share:.2f}: {row.answering_shown}/{row.answering} answering, "
              f"{row.off_shown}/{row.off} not")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
