"""One rule for claims: what a Findings sentence may say about the paired comparisons of its notebook.

A notebook's paired comparisons (each a difference over questions with its two-sided p,
:func:`rag_lib.evaluation.stats.compare`: McNemar's exact test when the outcomes are binary, a paired
bootstrap of 200,000 resamples otherwise) form one family, adjusted by Holm (:func:`judge`). A
comparison whose paired values differ on no question is left out of the family and marked *fixed*:
its test cannot reject at any level (Tarone's argument for discrete tests), so counting it would only
make the others' adjustment stricter; a larger k leaves hit@5, coverage@10 and MRR fixed by
construction. Every other comparison gets a Holm-adjusted p and an *adjusted interval*: the interval
that inverts its own test (the exact one, or the bootstrap's order statistics) at the level
α · p / p_Holm (:func:`adjusted_level`). An interval that inverts a test excludes 0 exactly when the p is
below its level, so the adjusted interval excludes 0 exactly when the adjusted p is below α: the two
never disagree (``tests/test_claims.py`` checks every stored comparison).

A sentence quotes a comparison only through :meth:`Judgement.text`: ``<metric> (<scope>) <diff>,
adjusted [<lo>, <hi>]``, followed by ``, includes 0`` when the adjusted interval does, and states a
verdict only through :class:`Verdict`, which names the metrics that earned it.
``tests/test_findings.py`` reads every committed report back with that grammar.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rag_lib.evaluation.stats import MIN_RESAMPLES, holm, paired_interval, signed_text, stored_value

ALPHA = 0.05
Kind = Literal["helps", "hurts", "mixed", "no clear effect", "nothing moved"]
# Stored beside each comparison (results.json) by :meth:`Judgement.stored`, read back by :meth:`Judgement.read`.
STORED_KEYS = ("changed", "in_family", "p_holm", "adjusted", "adjusted_confidence")


@dataclass(frozen=True)
class Comparison:
    """One paired comparison: ``subject`` (a variant, a strategy, a corpus size …) against its baseline.

    Parameters
    ----------
    subject : str
        What was compared with the baseline (one row of the notebook's table).
    scope : str
        Where (a language, a batch and language), or "" when the notebook has one.
    metric : str
        The metric's name as the table shows it (``hit@5``, ``coverage@evidence`` …).
    diff : float
        Mean paired difference (subject − baseline, or as the notebook's table defines it).
    p : float
        Two-sided bootstrap p, unadjusted.
    diffs : tuple of float
        The per-question differences the bootstrap resamples (for the adjusted interval).
    n_boot, seed : int
        The bootstrap's resamples and seed (those of the 95% interval).
    """

    subject: str
    scope: str
    metric: str
    diff: float
    p: float
    diffs: tuple[float, ...]
    n_boot: int = MIN_RESAMPLES
    seed: int = 0

    @classmethod
    def from_stored(cls, subject: str, scope: str, metric: str, stored: Mapping[str, Any], n_boot: int = MIN_RESAMPLES,
                    seed: int = 0, diff_key: str = "diff") -> Comparison:
        """A comparison as :func:`~rag_lib.evaluation.stats.compare` stores it (``diff_key``: the difference's
        column when a table names it otherwise)."""
        if "diffs" not in stored:
            raise KeyError(f"{subject} ({scope}) {metric}: the stored comparison has no per-question differences "
                           "(written before the claims rule); re-run the notebook that made it")
        return cls(subject=subject, scope=scope, metric=metric, diff=float(stored[diff_key]), p=float(stored["p"]),
                   diffs=tuple(float(d) for d in stored["diffs"]), n_boot=n_boot, seed=seed)

    @property
    def changed(self) -> int:
        """Questions whose paired values differ."""
        return sum(d != 0 for d in self.diffs)


@dataclass(frozen=True)
class Judgement:
    """A comparison after its family's adjustment.

    ``in_family`` is False for a fixed comparison (no question changed): it then has no adjusted p or interval.
    """

    subject: str
    scope: str
    metric: str
    diff: float
    changed: int
    in_family: bool
    p_holm: float | None
    adjusted: tuple[float, float] | None
    adjusted_confidence: float | None
    alpha: float = ALPHA

    @property
    def excludes_0(self) -> bool:
        """The adjusted interval excludes 0 (as stored; :func:`bound_text` never prints a bound that does as 0)."""
        return self.adjusted is not None and (self.adjusted[0] > 0 or self.adjusted[1] < 0)

    @property
    def effect(self) -> bool:
        """Holm rejects it and its adjusted interval excludes 0 (both, so a resampling edge never claims)."""
        return self.in_family and self.p_holm is not None and self.p_holm < self.alpha and self.excludes_0

    @property
    def direction(self) -> str:
        return "up" if self.diff > 0 else "down" if self.diff < 0 else "flat"

    def text(self, scoped: bool = True, metric: str | None = None) -> str:
        """``<metric> (<scope>) <diff>, adjusted [lo, hi]`` (``, includes 0`` when it does); a fixed comparison
        says so instead. ``metric`` replaces the metric's name (e.g. "structural − fixed-512 hit@5")."""
        name = (metric or self.metric) + (f" ({self.scope})" if scoped and self.scope else "")
        if not self.in_family or self.adjusted is None:
            return f"{name}: no question changed (fixed, outside the family)"
        lo, hi = self.adjusted
        return f"{name} {signed_text(self.diff)}, adjusted [{bound_text(lo)}, {bound_text(hi)}]" + (
            "" if self.excludes_0 else ", includes 0")

    def cell(self, p_holm: bool = True) -> str:
        """A table cell: ``diff [adjusted interval]`` (``; p_Holm``), or "no change (fixed)" outside the family."""
        if not self.in_family or self.adjusted is None:
            return "no change (fixed)"
        lo, hi = self.adjusted
        return f"{signed_text(self.diff)} [{bound_text(lo)}, {bound_text(hi)}]" + (
            (f"; p_Holm {self.p_holm:.3g}" if self.p_holm else "; p_Holm < 0.001") if p_holm else "")  # 0: no resample

    def stored(self) -> dict[str, Any]:
        """What a results.json keeps beside the comparison (:data:`STORED_KEYS`)."""
        return {"changed": self.changed, "in_family": self.in_family, "p_holm": self.p_holm,
                "adjusted": list(self.adjusted) if self.adjusted else None,
                "adjusted_confidence": self.adjusted_confidence}

    @classmethod
    def read(cls, subject: str, scope: str, metric: str, stored: Mapping[str, Any], alpha: float = ALPHA,
             diff_key: str = "diff") -> Judgement:
        """A judgement a notebook stored with :meth:`stored` (e.g. 11's, quoted by 08)."""
        missing = [k for k in STORED_KEYS if k not in stored]
        if missing:
            raise KeyError(f"{subject} ({scope}) {metric}: no {', '.join(missing)} stored (written before the "
                           "claims rule); re-run the notebook that made it")
        adjusted = stored["adjusted"]
        return cls(subject=subject, scope=scope, metric=metric, diff=float(stored[diff_key]),
                   changed=int(stored["changed"]), in_family=bool(stored["in_family"]), p_holm=stored["p_holm"],
                   adjusted=(float(adjusted[0]), float(adjusted[1])) if adjusted else None,
                   adjusted_confidence=stored["adjusted_confidence"], alpha=alpha)


@dataclass(frozen=True)
class Verdict:
    """What one row of a table (a subject, in one scope or all) shows, from its judgements."""

    judgements: tuple[Judgement, ...]

    @property
    def effects(self) -> tuple[Judgement, ...]:
        """The comparisons that earned the verdict, strongest (smallest adjusted p) first."""
        return tuple(sorted((j for j in self.judgements if j.effect), key=lambda j: (j.p_holm, -abs(j.diff))))

    @property
    def closest(self) -> Judgement | None:
        """The tested comparison nearest to an effect (smallest adjusted p), or None when nothing was tested."""
        tested = [j for j in self.judgements if j.in_family]
        return min(tested, key=lambda j: (j.p_holm, -abs(j.diff))) if tested else None

    @property
    def kind(self) -> Kind:
        up = any(j.diff > 0 for j in self.effects)
        down = any(j.diff < 0 for j in self.effects)
        if up and down:
            return "mixed"
        if up or down:
            return "helps" if up else "hurts"
        return "no clear effect" if self.closest else "nothing moved"

    def text(self, scoped: bool = True) -> str:
        """The verdict in words, naming the metric(s) that earned it with their adjusted intervals."""
        if self.effects:
            return f"{self.kind}: " + "; ".join(j.text(scoped) for j in self.effects)
        if self.closest is None:
            return "no question changed on any metric"
        return f"no effect survives the adjustment (closest: {self.closest.text(scoped)})"


@dataclass(frozen=True)
class Family:
    """The judged comparisons of one notebook's family.

    Parameters
    ----------
    name : str
        What the family holds, in words ("this run's variants × languages × metrics").
    judgements : tuple of Judgement
        Every comparison, in the order given to :func:`judge`, fixed ones included (marked).
    alpha : float
        Family-wise error rate.
    """

    name: str
    judgements: tuple[Judgement, ...]
    alpha: float = ALPHA

    @property
    def size(self) -> int:
        """Comparisons in the Holm family (fixed ones are not)."""
        return sum(j.in_family for j in self.judgements)

    @property
    def fixed(self) -> int:
        return len(self.judgements) - self.size

    def get(self, subject: str, scope: str, metric: str) -> Judgement:
        for j in self.judgements:
            if (j.subject, j.scope, j.metric) == (subject, scope, metric):
                return j
        raise KeyError(f"no comparison {subject} ({scope}) {metric} in the family {self.name!r}")

    def verdict(self, subject: str, scope: str | None = None) -> Verdict:
        """The verdict of ``subject`` over every metric, in ``scope`` (or in every scope when None)."""
        return Verdict(tuple(j for j in self.judgements
                             if j.subject == subject and (scope is None or j.scope == scope)))

    def effects(self) -> int:
        return sum(j.effect for j in self.judgements)

    def describe(self) -> str:
        """One sentence on how the intervals in the Findings were adjusted."""
        fixed = (f"; {self.fixed} comparisons in which no question changed are left out and marked fixed"
                 if self.fixed else "")
        return (f"Adjusted: Holm over the {self.size} comparisons of {self.name}{fixed}; an adjusted interval is the "
                "interval of the comparison's own test (McNemar's exact test for binary outcomes, a paired bootstrap "
                f"of 200,000 resamples otherwise) at level α·p/p_Holm, so it excludes 0 exactly when the Holm-adjusted "
                f"p is below {self.alpha}.")

    def summary(self) -> dict[str, Any]:
        """For results.json: the family's name, size, fixed cells, α and effects."""
        return {"name": self.name, "comparisons": self.size, "fixed": self.fixed, "alpha": self.alpha,
                "effects": self.effects(),
                "method": "Holm-Bonferroni; adjusted intervals of each comparison's own test at alpha * p / p_Holm"}


def bound_text(x: float) -> str:
    """An interval's end as sentences and tables print it: 3 decimals, or more when 3 would show a bound that
    excludes 0 as 0 (so what is printed says what the stored interval does)."""
    return signed_text(x) if x == 0 or round(x, 3) != 0 else f"{x:+.6f}".rstrip("0")


def adjusted_level(p: float, p_holm: float, rank: int, m: int, alpha: float = ALPHA) -> float:
    """The level a comparison's adjusted interval is drawn at: ``α · p / p_Holm``, so that the interval (which
    inverts the test: it excludes 0 exactly when p is below its level) excludes 0 exactly when p_Holm < α. A
    comparison with p = 0 gets Holm's own level for its rank, α / (m − rank); its interval excludes 0 anyway."""
    return alpha * p / p_holm if p > 0 else alpha / (m - rank)


def judge(comparisons: Iterable[Comparison], name: str, alpha: float = ALPHA) -> Family:
    """Adjust ``comparisons`` as one Holm family (see the module docstring); fixed ones are left out and marked."""
    items = list(comparisons)
    tested = [c for c in items if c.changed]
    adjusted_p = dict(zip(map(id, tested), holm([c.p for c in tested]), strict=True))
    ranks = {id(c): rank for rank, c in enumerate(sorted(tested, key=lambda c: c.p))}
    out = []
    for c in items:
        if not c.changed:
            out.append(Judgement(c.subject, c.scope, c.metric, c.diff, 0, False, None, None, None, alpha))
            continue
        level = adjusted_level(c.p, adjusted_p[id(c)], ranks[id(c)], len(tested), alpha)
        lo, hi = paired_interval(c.diffs, level, c.n_boot, c.seed)
        out.append(Judgement(c.subject, c.scope, c.metric, c.diff, c.changed, True, stored_value(adjusted_p[id(c)]),
                             (stored_value(lo), stored_value(hi)), round(1.0 - level, 8), alpha))
    return Family(name=name, judgements=tuple(out), alpha=alpha)


def _key(row: Mapping[str, Any], keys: Sequence[str]) -> str:
    return ", ".join(str(row[k]) for k in keys)


def judge_rows(rows: Sequence[MutableMapping[str, Any]], name: str, subject: Sequence[str], scope: Sequence[str],
               diff_key: str, n_boot: int, seed: int, alpha: float = ALPHA) -> Family:
    """Judge a comparison table's rows as one family, each row keeping its judgement (:data:`STORED_KEYS`, and
    ``adjusted (Holm)``: the table cell) in place.

    Parameters
    ----------
    rows : sequence of dict
        One per comparison, each with ``metric``, ``diff_key``, ``p`` and ``diffs`` (as ``compare`` writes them).
    subject, scope : sequence of str
        The columns that name a row's subject and its scope (joined with ", ").
    """
    family = judge((Comparison.from_stored(_key(r, subject), _key(r, scope), r["metric"], r, n_boot, seed, diff_key)
                    for r in rows), name, alpha)
    for r, j in zip(rows, family.judgements, strict=True):
        r.update(j.stored())
        r["adjusted (Holm)"] = j.cell()
    return family


def read_rows(rows: Sequence[Mapping[str, Any]], name: str, subject: Sequence[str], scope: Sequence[str],
              diff_key: str, alpha: float = ALPHA) -> Family:
    """The family :func:`judge_rows` stored in a table's rows, read back (no resampling)."""
    return Family(name, tuple(Judgement.read(_key(r, subject), _key(r, scope), r["metric"], r, alpha, diff_key)
                              for r in rows), alpha)
