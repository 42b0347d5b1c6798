"""How findings are worded (issue 46, item 1): every stored Findings sentence and the README's say what they
measure. A refusal rate is never given without its false refusal; a sentence names one denominator (the refusal
and false-refusal pair excepted); only the sealed test set's figures are called out of sample."""

from __future__ import annotations

import json
import re

import pytest

from rag_lib.core.config import REPO_ROOT

RESULTS = REPO_ROOT / "results"
README = REPO_ROOT / "README.md"

# What a rate in a sentence is "of", by the words that name it (the most specific first).
DENOMINATORS = {
    "gold in the Top-k": re.compile(r"(?:whose|with their|with every|with its) gold(?: piece)?s? (?:is |are )?"
                                    r"(?:all )?in the Top|with complete evidence|whose evidence is complete",
                                    re.IGNORECASE),
    "checkable": re.compile(r"with a checkable key fact", re.IGNORECASE),
    "unanswerable": re.compile(r"\bunanswerable (?:questions|ones)\b", re.IGNORECASE),
}
REFUSAL = re.compile(r"\bunanswerable\b.*\bdeclin|\bdeclin\w*\b.*\bunanswerable\b|refusal correctness", re.IGNORECASE)
FALSE_REFUSAL = re.compile(r"false refusal|wrongly declin", re.IGNORECASE)
OUT_OF_SAMPLE = re.compile(r"out[ -]of[ -]sample", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """Sentences of a finding: split at a full stop followed by a space and a capital or a bracket."""
    return [s for s in re.split(r"(?<=[.;])\s+(?=[A-Z(])", text) if s.strip()]


def stored_findings() -> list[tuple[str, str]]:
    out = []
    for path in sorted(RESULTS.glob("*/results.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out += [(path.parent.name, finding) for finding in data.get("findings", [])]
    return out


def readme_findings() -> list[tuple[str, str]]:
    return [("README", line) for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("- ")]


def problems(where: str, finding: str) -> list[str]:
    out = []
    if REFUSAL.search(finding) and not FALSE_REFUSAL.search(finding):
        out.append("a refusal rate without its false refusal")
    for sentence in sentences(finding):
        named = {name for name, pattern in DENOMINATORS.items() if pattern.search(sentence)}
        paired = named == {"unanswerable", "gold in the Top-k"} and FALSE_REFUSAL.search(sentence)
        if len(named) > 1 and not paired:
            out.append(f"one sentence, {len(named)} denominators ({', '.join(sorted(named))}): {sentence[:160]}")
        if OUT_OF_SAMPLE.search(sentence) and "test set" not in sentence.lower():
            out.append(f"'out of sample' for a development-set figure: {sentence[:160]}")
    return [f"{where}: {p}" for p in out]


@pytest.mark.parametrize("source", ["results", "README"])
def test_every_finding_says_what_it_measures(source):
    findings = stored_findings() if source == "results" else readme_findings()
    assert findings
    found = [p for where, finding in findings for p in problems(where, finding)]
    assert found == [], "\n".join(found)


def test_the_rules_catch_each_fault():
    assert problems("x", "zh: unanswerable questions declined 25/33.") == [
        "x: a refusal rate without its false refusal"]
    mixed = ("It states every key fact for 9 of 44 answerable questions whose gold is in the Top-5, and shows an "
             "answer missing a key fact for 16 of 57 answerable questions with a checkable key fact.")
    assert "2 denominators" in problems("x", mixed)[0]
    assert problems("x", "The gate declines 25/33 unanswerable questions, beside false refusal 14/45 of the answerable "
                         "questions with complete evidence.") == []
    assert "out of sample" in problems("x", "The leave-one-out gate is out of sample.")[0]
    assert problems("x", "On the sealed test set, out of sample, it answers 5 of 40.") == []
