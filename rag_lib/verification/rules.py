"""The rules a claim must pass against the units its model cited, each returning what it found wrong.

A *claim* is one sentence of an answer; its *cited units* are the quotes (a sentence, list item or table
row, with its table's header row) that the model itself cited, never units the workbook picked. Each rule
is a function ``(claim, units, question) -> list[str]`` of problems, empty when the claim passes:

- :func:`number_problems`: every number is stated by a cited unit **with the same unit** (a number
  written without a unit matches only a number written without one: "20 files" is not "20 minutes",
  "25 files" is not "25 MiB"), **for the same thing**: the count noun after it ("20 *files*") occurs in
  that unit, and the plan it qualifies (named by the claim, else by the question) is the unit's, or,
  in a table row, the header of the number's own column (a Free-plan question answered with the Paid
  column's figure fails); a figure from a table that gives each plan its own value must name its plan,
  unless the question asks about that plan alone ("CPU time per request is 10 ms" fails: 10 ms is Workers
  Free's, Workers Paid's is 5 min);
- :func:`identifier_problems`: every command, flag, config key, API name, file name and URL occurs
  verbatim in a cited unit;
- :func:`polarity_problems`: a claim that negates what its closest unit states, or states what that
  unit negates, fails; so does a claim that widens or narrows with a quantifier (all, every, only,
  所有, 仅 …) that no cited unit has;
- :func:`coverage_problems`: the claim's content words beyond the question's are covered by its units
  at :data:`MIN_COVERAGE` or more (when claim and units are in one language; across languages a
  claim's words cannot be compared, and the other rules still apply).

Numbers, names and polarity compare across languages (units and plan names are mapped to one
vocabulary); prose can only be compared in one language, which is why claims should be written in the
evidence's language.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from rag_lib.core.text import language_of
from rag_lib.verification.statements import Statement, checkable_statements, number_matches, number_spans, squash

# The share of a claim's own content words (those beyond the question's) that its cited units must hold.
# Chosen on the hand-checked narrowed answers (data/benchmark/answer_checks_narrowed.yaml): see
# rag_lib.verification.calibration for its precision and recall there.
MIN_COVERAGE = 0.5

# Plans and tiers a number can belong to, by what the question or claim calls them, in either language.
_PLANS = {
    "free": ("free", "workers free", "免费", "免费版", "免费计划", "免费套餐"),
    "paid": ("paid", "workers paid", "付费", "付费版", "付费计划", "付费套餐", "standard", "标准"),
    "pro": ("pro", "专业版"),
    "business": ("business", "商业版"),
    "enterprise": ("enterprise", "企业", "企业版"),
}
_PLAN_OF = {alias: plan for plan, aliases in _PLANS.items() for alias in aliases}
_PLAN_ALIASES = "|".join(sorted((re.escape(a) for a in _PLAN_OF), key=len, reverse=True))
_PLAN_WORDS = re.compile(r"(?<![A-Za-z0-9_-])(" + _PLAN_ALIASES
                         + r")(?![A-Za-z0-9_-])", re.IGNORECASE)

# Polarity: a negation makes a sentence say the opposite. Quantifiers widen ("all", "every", "any",
# "always") or narrow ("only") what a sentence says; the category is what is compared across languages.
NEGATION = re.compile(r"\b(?:not|no|never|none|nothing|cannot|can't|don't|doesn't|isn't|aren't|won't|wasn't|"
                       r"weren't|without|neither|nor|unable)\b|n't\b|不|无|没有|未|非|勿|禁止|无法|不能|不会|不可",
                       re.IGNORECASE)
_QUANTIFIERS = (  # widening ("all", "every", "always") and narrowing ("only")
    re.compile(r"\b(?:all|every|always|everything|unlimited)\b|所有|全部|每个|任何|一切|总是|始终|无限", re.IGNORECASE),
    re.compile(r"\b(?:only|solely|exclusively)\b|仅|只有|只能|唯一", re.IGNORECASE),
)
# Words that change what a number is: the unit's figure is a default or an average, or a bound. A claim that
# drops "default"/"average" states another figure ("30 seconds" is the default, the ceiling is 5 min); a claim
# that turns a minimum into a maximum (or back) says the opposite.
QUALIFIERS = {
    "default": re.compile(r"\bdefaults?\b|默认", re.IGNORECASE),
    "average": re.compile(r"\b(?:average|avg|mean)\b|平均", re.IGNORECASE),
    "minimum": re.compile(r"\b(?:minimum|min\.|at least)\b|最少|至少|最低|最小", re.IGNORECASE),
    "maximum": re.compile(r"\b(?:maximum|max\.?|up to|at most)\b|最多|最大|上限|最高", re.IGNORECASE),
}
_OPPOSITE = {"minimum": "maximum", "maximum": "minimum"}
_QUALIFIER_WINDOW = 40  # characters before a number (and 15 after) that qualify it
# Names of the form "Class A", "Tier 2": one letter or digit away from another thing, compared verbatim.
_LETTERED_NAME = re.compile(r"\b(?:Class|Tier|Type|Plan|Level|Stage|Phase|Option|Step)\s+[A-Z0-9]\b")
# The count noun after a number ("20 files", "100,000 requests"); units are handled by the number rule.
_COUNT_NOUN = re.compile(r"^\s*(?:[-–]\s*)?([A-Za-z][A-Za-z-]{2,})")
_NOT_NOUNS = frozenset({"and", "or", "per", "the", "for", "of", "to", "in", "on", "at", "by", "with", "from",
                        "more", "less", "than", "times", "each", "day", "days", "month", "months", "plus"})


@dataclass(frozen=True)
class CitedUnit:
    """A unit the model cited: its text, for a table row its table's header row, and the page path, title and
    heading path of its chunk (what a sentence is about when it does not say: "Object size is 5 TiB" on r2/limits).
    The context is read only to decide whether an answer is about what was asked, never as support for a claim."""

    text: str
    header: str | None = None
    context: str = ""


def plans_in(text: str) -> set[str]:
    """The plans ``text`` names (``{"free", "paid"}`` …), in either language."""
    return {_PLAN_OF[m.group(1).lower()] for m in _PLAN_WORDS.finditer(text)}


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _plans_of_number(unit: CitedUnit, statement: Statement) -> set[str]:
    """The plans a number belongs to in ``unit``: its column's header in a table row, else the unit's own."""
    if unit.header and unit.text.lstrip().startswith("|"):
        header = _cells(unit.header)
        for index, cell in enumerate(_cells(unit.text)):
            if number_matches(statement, cell) and index < len(header):
                column = plans_in(header[index])
                if column:
                    return column
        return plans_in(unit.header) | plans_in(unit.text) if not plans_in(unit.header) else set()
    return plans_in(unit.text)


def _per_plan(unit: CitedUnit, statement: Statement) -> set[str]:
    """When ``unit`` is a table row whose header gives two or more plans a column each, and the number is in
    some of those columns but not all: their plans (empty: the number holds whatever the plan, or no such table)."""
    if not (unit.header and unit.text.lstrip().startswith("|")):
        return set()
    columns = [(plans_in(head), cell) for head, cell in zip(_cells(unit.header), _cells(unit.text), strict=False)
               if plans_in(head)]
    if len({frozenset(plans) for plans, _ in columns}) < 2:
        return set()
    stating = set().union(*(plans for plans, cell in columns if number_matches(statement, cell)))
    return stating if stating != set().union(*(plans for plans, _ in columns)) else set()


def _stem(word: str) -> str:
    word = word.lower()
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _count_noun(claim: str, statement: Statement) -> str | None:
    """The English count noun right after a number without a measurement unit ("20 files" → "file")."""
    if statement.unit:
        return None
    digits = statement.text
    at = claim.find(digits)
    if at < 0:
        return None
    match = _COUNT_NOUN.match(claim[at + len(digits):])
    if not match or match.group(1).lower() in _NOT_NOUNS:
        return None
    return _stem(match.group(1))


def number_problems(claim: str, units: Sequence[CitedUnit], question: str) -> list[str]:
    """Each number of ``claim`` with no cited unit stating it with its unit, its count noun and its plan."""
    problems = []
    asked = squash(question)
    wanted_plans = plans_in(claim) or plans_in(question)
    for statement in checkable_statements(claim):
        if statement.kind != "number" or squash(statement.text) in asked:
            continue
        stating = [u for u in units if number_matches(statement, u.text)]
        if not stating:
            with_unit = " with no unit" if not statement.unit else ""
            problems.append(f"'{statement.text}'{with_unit} is stated by none of its cited units")
            continue
        noun = _count_noun(claim, statement) if language_of(claim) == "en" else None
        if noun and not any(noun in {_stem(w) for w in re.findall(r"[A-Za-z][A-Za-z-]+", u.text)} for u in stating):
            problems.append(f"'{statement.text}' counts '{noun}s' in the claim, but its cited units count "
                            "something else")
            continue
        qualified = _qualifier_problem(claim, statement, stating)
        if qualified:
            problems.append(qualified)
            continue
        if wanted_plans and not any(_plans_of_number(u, statement) & wanted_plans or not _plans_of_number(u, statement)
                                    for u in stating):
            theirs = sorted(set().union(*(_plans_of_number(u, statement) for u in stating)))
            problems.append(f"'{statement.text}' is the {'/'.join(theirs)} figure in its cited units, not the "
                            f"{'/'.join(sorted(wanted_plans))} one the {'claim' if plans_in(claim) else 'question'} "
                            "names")
            continue
        # A table that gives each plan its own value: a claim stating one of them must say whose it is, unless the
        # question asks about that plan alone ("10 ms" is Workers Free's CPU time, Workers Paid's is 5 min).
        split = [_per_plan(u, statement) for u in stating]
        asked_plans = plans_in(question)
        if not plans_in(claim) and all(split) and not (len(asked_plans) == 1 and all(asked_plans <= p for p in split)):
            problems.append(f"'{statement.text}' is the {'/'.join(sorted(set().union(*split)))} figure of a table "
                            "that gives each plan its own, and the claim names no plan")
    return problems


def _qualifiers_near(text: str, start: int, end: int) -> set[str]:
    """The qualifiers within :data:`_QUALIFIER_WINDOW` characters before a number (or just after it), inside
    its table cell when it is in one."""
    left = text.rfind("|", 0, start) + 1 if "|" in text[:start] else max(0, start - _QUALIFIER_WINDOW)
    right = text.find("|", end) if "|" in text[end:] else min(len(text), end + 15)
    window = text[max(left, start - _QUALIFIER_WINDOW):right]
    return {name for name, pattern in QUALIFIERS.items() if pattern.search(window)}


def _qualifier_problem(claim: str, statement: Statement, stating: Sequence[CitedUnit]) -> str | None:
    """A default or average figure stated as plain, or a bound turned into its opposite."""
    said = {name for name, pattern in QUALIFIERS.items() if pattern.search(claim)}
    for unit in stating:
        for start, end in number_spans(statement, unit.text):
            near = _qualifiers_near(unit.text, start, end)
            for name in ("default", "average"):
                if name in near and name not in said:
                    return f"'{statement.text}' is the {name} in its cited unit, which the claim does not say"
            for name, opposite in _OPPOSITE.items():
                if name in said and opposite in near and name not in near:
                    return f"'{statement.text}' is a {opposite} in its cited unit, and the claim calls it a {name}"
    return None


def identifier_problems(claim: str, units: Sequence[CitedUnit], question: str) -> list[str]:
    """Each command, config key, API or file name and URL of ``claim`` that no cited unit holds verbatim."""
    joined = squash("\n".join(u.text for u in units))
    asked = squash(question)
    names = [s.text for s in checkable_statements(claim) if s.kind in ("identifier", "url")
             if squash(s.text) not in asked]
    # "Class A" says which thing a claim is about even when the question names it (and Class B beside it).
    names += _LETTERED_NAME.findall(claim)
    return [f"'{name}' occurs in none of its cited units" for name in dict.fromkeys(names)
            if squash(name) not in joined]


@cache
def _terms(text: str) -> frozenset[str]:
    from rag_lib.retrieval.tokenize import content_terms  # jieba: loaded on use

    # Numbers are the number rule's; Latin words of one or two letters ("up", "at") carry no content here.
    return frozenset(t for t in content_terms(text) if not t.replace(".", "").replace(",", "").isdigit()
                     and not (len(t) <= 2 and t.isascii()))


def _closest(claim: str, units: Sequence[CitedUnit]) -> CitedUnit | None:
    """The cited unit sharing most content words with ``claim`` (the first on a tie)."""
    mine = _terms(claim)
    return max(units, key=lambda u: len(mine & _terms(u.text)), default=None)


def polarity_problems(claim: str, units: Sequence[CitedUnit], question: str) -> list[str]:
    """A negation the closest cited unit does not share, and a quantifier no cited unit has."""
    problems = []
    closest = _closest(claim, units)
    if closest is not None:
        negated, unit_negated = bool(NEGATION.search(claim)), bool(NEGATION.search(closest.text))
        if negated != unit_negated:
            problems.append("it negates what its closest cited unit states" if negated
                            else "its closest cited unit negates what it states")
    for pattern in _QUANTIFIERS:
        if pattern.search(claim) and not pattern.search(question) and not any(pattern.search(u.text) for u in units):
            word = pattern.search(claim).group()  # type: ignore[union-attr]
            problems.append(f"it says '{word}', which none of its cited units says")
    return problems


def coverage(claim: str, units: Sequence[CitedUnit], question: str) -> float | None:
    """The share of ``claim``'s content words beyond the question's that its units hold; None across
    languages or when the claim adds no word of its own."""
    if not units or any(language_of(u.text) != language_of(claim) for u in units):
        return None
    own = _terms(claim) - _terms(question)
    if not own:
        return None
    held = frozenset().union(*(_terms(u.text) | _terms(u.header or "") for u in units))
    return len(own & held) / len(own)


def coverage_problems(claim: str, units: Sequence[CitedUnit], question: str) -> list[str]:
    """A claim whose own content words its cited units hold less than :data:`MIN_COVERAGE` of."""
    share = coverage(claim, units, question)
    if share is not None and share < MIN_COVERAGE:
        return [f"its cited units hold {share:.0%} of its own words (at least {MIN_COVERAGE:.0%} needed)"]
    return []


RULES = (number_problems, identifier_problems, polarity_problems, coverage_problems)


def claim_problems(claim: str, units: Sequence[CitedUnit], question: str) -> list[str]:
    """Every problem the rules find with ``claim`` against its own cited ``units``."""
    if not units:
        return ["it cites no unit"]
    return [problem for rule in RULES for problem in rule(claim, units, question)]
