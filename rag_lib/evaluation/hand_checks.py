"""Hand-checked answers (``data/benchmark/answer_checks.yaml``) and how far the key-fact measure agrees with them.

The key-fact measure (:mod:`rag_lib.evaluation.correctness`) calls an answer correct when it contains
every checkable key fact as a string. It cannot see a fact stated in other words, nor a right number
attached to the wrong thing. A reviewer therefore read a seeded sample of answers against the
documentation and judged each one. This module loads those judgements and the answers they judge;
:mod:`rag_lib.evaluation.hand_check_draw` reproduces the draw, and :mod:`rag_lib.evaluation.hand_check_agreement`
reports the agreement (2×2 table, percent with a Wilson interval, Cohen's kappa, the disagreements).

Judgements
----------
``correct``
    states what the question asks, and it is right.
``partial``
    what it states is right, but part of what the question asks is missing.
``wrong``
    states something false, or answers another question.
``no_answer``
    restates the question or states nothing checkable.

Only ``correct`` counts as right when compared with the key-fact measure, whose ``correct`` also
requires every fact of every gold piece.

Example
-------
>>> checks = load_hand_checks()                                            # doctest: +SKIP
>>> from rag_lib.evaluation.hand_check_agreement import agreement            # doctest: +SKIP
>>> rows = answer_rows(results_at_commit(checks.results_commit, checks.results_path))  # doctest: +SKIP
>>> agreement(checks, rows).percent                                        # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_lib.benchmark import read_yaml
from rag_lib.core.config import BENCHMARK_DIR, REPO_ROOT
from rag_lib.core.errors import BenchmarkError

DEFAULT_PATH = BENCHMARK_DIR / "answer_checks.yaml"
# One file per sample: the first (Qwen 0.5B and extractive) and the narrowed pipeline's.
DEFAULT_PATHS = (DEFAULT_PATH, BENCHMARK_DIR / "answer_checks_narrowed.yaml")
JUDGEMENTS = ("correct", "partial", "wrong", "no_answer")
LANGS = ("zh", "en")
GENERATORS = ("extractive", "llm", "narrowed")
DEFAULT_GENERATORS = ("extractive", "llm")  # a file without `generators:` samples these

_TOP_KEYS = {"results_commit", "results_path", "run", "seed", "per_language", "generators", "checks"}
_ENTRY_KEYS = {"question", "lang", "generator", "answer_sha256", "prose_sha256", "judgement", "reason",
               "key_fact_note"}
_REQUIRED = ("question", "lang", "generator", "answer_sha256", "judgement", "reason")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class HandCheck:
    """One hand-checked answer: which answer (question, language, generator, hash) and the judgement.

    ``key_fact_note`` is optional: where the key-fact measure misleads on this answer, and why. ``prose_sha256``
    (optional): the hash of the judged answer as prose (``core.text.as_prose``), where markup made it differ; the
    page shows that text, so the judgement still holds for it.
    """

    question: str
    lang: str
    generator: str
    answer_sha256: str
    judgement: str
    reason: str
    key_fact_note: str = ""
    prose_sha256: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.lang, self.generator, self.question)

    def judged(self, answer: str) -> bool:
        """Whether ``answer`` is the text this check judged (as written, or as the same text in prose)."""
        return answer_sha256(answer) in {self.answer_sha256, self.prose_sha256}

    @property
    def hand_correct(self) -> bool:
        # Only a full, right answer matches the key-fact measure's "correct" (all facts stated).
        return self.judgement == "correct"


@dataclass(frozen=True)
class HandChecks:
    """The file: the results it was drawn from (commit, path, run), the draw's settings (seed, rows per
    language, the generators sampled) and the checks."""

    checks: tuple[HandCheck, ...]
    results_commit: str
    results_path: str
    run: str = "ungated"
    seed: int = 0
    per_language: int = 24
    path: Path | None = None
    generators: tuple[str, ...] = DEFAULT_GENERATORS

    def __len__(self) -> int:
        return len(self.checks)

    def __iter__(self) -> Iterator[HandCheck]:
        return iter(self.checks)

    def counts(self) -> dict[tuple[str, str], int]:
        """Entries per (language, generator)."""
        out: dict[tuple[str, str], int] = {}
        for c in self.checks:
            out[(c.lang, c.generator)] = out.get((c.lang, c.generator), 0) + 1
        return out




# ---------------------------------------------------------------- loading


def answer_sha256(text: str) -> str:
    """sha256 hex digest of the answer text (UTF-8), as stored in ``answer_sha256``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _entry_error(where: str, problem: str, fix: str) -> BenchmarkError:
    return BenchmarkError(f"{where}: {problem}. Fix: {fix}.")


def _parse_check(raw: Any, where: str, generators: Sequence[str] = GENERATORS) -> HandCheck:
    if not isinstance(raw, Mapping):
        raise _entry_error(where, f"is a {type(raw).__name__}, not a mapping",
                           "write the entry as question/lang/generator/answer_sha256/judgement/reason keys")
    unknown = set(raw) - _ENTRY_KEYS
    if unknown:
        raise _entry_error(where, f"unknown key(s) {sorted(unknown)}", f"use only {sorted(_ENTRY_KEYS)}")
    missing = [k for k in _REQUIRED if k not in raw or raw[k] in (None, "")]
    if missing:
        raise _entry_error(where, f"missing {missing}", "add them (every entry needs " + ", ".join(_REQUIRED) + ")")
    values = {k: raw[k] for k in raw}
    for k, v in values.items():
        if not isinstance(v, str):
            raise _entry_error(where, f"{k} is {v!r}, not a string", f"quote the value of {k}")
    if values["judgement"] not in JUDGEMENTS:
        raise _entry_error(where, f"judgement {values['judgement']!r} is not one of {list(JUDGEMENTS)}",
                           "use correct, partial, wrong or no_answer (see the file's header)")
    if values["lang"] not in LANGS:
        raise _entry_error(where, f"lang {values['lang']!r} is not one of {list(LANGS)}", "use zh or en")
    if values["generator"] not in generators:
        raise _entry_error(where, f"generator {values['generator']!r} is not one of {list(generators)}",
                           "use a generator the file's `generators:` lists")
    for key in ("answer_sha256", "prose_sha256"):
        if key in values and not _SHA_RE.match(values[key]):
            raise _entry_error(where, f"{key} is not 64 lower-case hex digits",
                               "store hand_checks.answer_sha256(answer) of the answer judged (as prose for "
                               "prose_sha256)")
    return HandCheck(**values)


def parse_hand_checks(data: Any, path: Path | None = None) -> HandChecks:
    """Validate the parsed YAML of an answer-checks file.

    Parameters
    ----------
    data
        The parsed YAML (a mapping with ``results_commit``, ``results_path``, ``checks`` …).
    path
        Where it came from, for messages.

    Returns
    -------
    HandChecks

    Raises
    ------
    BenchmarkError
        Naming the entry (index, question, language, generator) and the fix: an unknown or missing
        key, a judgement outside ``correct/partial/wrong/no_answer``, a malformed hash, a duplicate.
    """
    name = str(path or "answer_checks.yaml")
    if not isinstance(data, Mapping):
        raise BenchmarkError(f"{name} is not a mapping. Fix: start it with results_commit:, results_path:, checks:.")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise BenchmarkError(f"{name}: unknown top-level key(s) {sorted(unknown)}. Fix: use only {sorted(_TOP_KEYS)}.")
    commit = str(data.get("results_commit", ""))
    if not _COMMIT_RE.match(commit):
        raise BenchmarkError(f"{name}: results_commit {commit!r} is not a 40-digit commit hash. "
                             "Fix: name the commit whose results the sample was drawn from.")
    if not data.get("results_path"):
        raise BenchmarkError(f"{name}: results_path is missing. Fix: name the results.json (under results/) "
                             "whose answers were judged.")
    raw_generators = data.get("generators") or list(DEFAULT_GENERATORS)
    if not isinstance(raw_generators, list):
        raise BenchmarkError(f"{name}: generators is {raw_generators!r}, not a list. "
                             "Fix: write it as a YAML list, e.g. generators: [narrowed].")
    generators = tuple(str(g) for g in raw_generators)
    unknown_generators = [g for g in generators if g not in GENERATORS]
    if unknown_generators:
        raise BenchmarkError(f"{name}: generators {unknown_generators} are not among {list(GENERATORS)}. "
                             "Fix: list only answerers of notebook 10 under generators:.")
    raw_checks = data.get("checks")
    if not isinstance(raw_checks, list) or not raw_checks:
        raise BenchmarkError(f"{name}: checks is missing or empty. Fix: list the judged answers under checks:.")
    checks: list[HandCheck] = []
    seen: set[tuple[str, str, str]] = set()
    for i, raw in enumerate(raw_checks):
        label = ""
        if isinstance(raw, Mapping):
            label = " (" + "/".join(str(raw.get(k, "?")) for k in ("lang", "generator", "question")) + ")"
        check = _parse_check(raw, f"{name}, checks[{i}]{label}", generators)
        if check.key in seen:
            raise _entry_error(f"{name}, checks[{i}]{label}", "duplicates an earlier entry",
                               "keep one judgement per question, language and generator")
        seen.add(check.key)
        checks.append(check)
    try:
        seed, per_language = int(data.get("seed", 0)), int(data.get("per_language", 24))
    except (TypeError, ValueError) as exc:
        raise BenchmarkError(f"{name}: seed and per_language must be integers. Fix: write them as numbers.") from exc
    return HandChecks(tuple(checks), commit, str(data["results_path"]), str(data.get("run", "ungated")),
                      seed, per_language, path, generators)


def load_hand_checks(path: str | Path | None = None) -> HandChecks:
    """Load and validate ``data/benchmark/answer_checks.yaml`` (or ``path``); see :func:`parse_hand_checks`."""
    p = Path(path) if path is not None else DEFAULT_PATH
    return parse_hand_checks(read_yaml(p, "answer-checks file"), p)


def load_all_hand_checks(paths: Sequence[Path] = DEFAULT_PATHS) -> list[HandChecks]:
    """Every committed sample (:data:`DEFAULT_PATHS`), each validated by :func:`load_hand_checks`."""
    return [load_hand_checks(p) for p in paths]


def results_at_commit(commit: str, results_path: str, repo: Path = REPO_ROOT) -> dict[str, Any]:
    """The results file as committed at ``commit`` (``git show``), not the working copy.

    The working copy may be rewritten by a new run; the judgements hold for the committed answers.

    Raises
    ------
    BenchmarkError
        Git cannot show the file at that commit (not a repository, shallow clone, wrong path).
    """
    try:
        out = subprocess.run(["git", "show", f"{commit}:{results_path}"], cwd=repo, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        raise BenchmarkError(f"cannot read {results_path} at commit {commit[:12]} "
                             f"({detail.decode(errors='replace').strip() or exc}). Fix: run in a full git "
                             "checkout of the repository (not a shallow clone or an export).") from exc
    return json.loads(out)


def answer_rows(results: Mapping[str, Any], run: str = "ungated",
                generators: Sequence[str] = GENERATORS) -> list[dict[str, Any]]:
    """The answer rows of notebook 10's results, one per (language, generator, question).

    Parameters
    ----------
    results
        Parsed ``results/10_local_llm/results.json``.
    run
        The run suffix: rows come from ``answers[generator]["runs"]["<lang>:<run>"]``.
    generators
        The answerers to read; one the results do not hold (an older run) is skipped.

    Returns
    -------
    list of dict
        Each row as stored, with ``lang`` and ``generator`` added.
    """
    rows: list[dict[str, Any]] = []
    for generator in generators:
        if generator not in results["answers"]:
            continue
        runs = results["answers"][generator]["runs"]
        for lang in LANGS:
            for row in runs[f"{lang}:{run}"]["rows"]:
                rows.append({**row, "lang": lang, "generator": generator})
    return rows
