"""A second, blind pass over the benchmark's label decisions (issue 27, item 2).

Every label decision is enumerated by kind, a seeded random 20% of each kind is drawn, and the sample
is written as a **blind sheet**: what a reviewer needs to decide each item (question texts, piece
descriptions, the chunk or key fact to judge), never the first decision or its reason. The reviewer's
calls go into ``blind_review.yaml``; ``agreement`` compares them with the first decisions (Cohen's kappa
per kind, raw agreement, n) and lists the disagreements, each to be resolved in
``blind_review_resolutions.yaml``.

Kinds and their units
---------------------
``chunk``
    One (question, chunk) pair that the labels decide: a chunk a locator of some piece resolves to (on
    the labelled or the wide batch) is ``gold``; a chunk with only ``not_gold`` decisions
    (``audit_decisions.yaml``, ``pool_decisions.yaml``) is ``not_gold``. The pair, not (question, piece,
    chunk), is the unit, because most decisions are ``*`` (gold for no piece); the piece a reviewer
    names is compared separately among pairs both call gold.
``question``
    One question on one batch: ``answerable`` or ``unanswerable`` (``questions.yaml`` on the labelled
    batch; on the wide batch, each ``absent_review`` of the batch file: answered or still unanswerable).
``key_fact``
    One checkable fact of ``key_facts.yaml`` (one entry under a piece, with its alternatives): the first
    pass claims "a complete answer to this piece must state this, and any of these wordings states it;
    the source chunk states it" (``holds``). A reviewer says ``holds`` or ``fails``. Facts with
    ``checkable: false`` are a different decision (no string can check the piece) that cannot be shown
    without revealing it (they have no wording), so they are not sampled. Every first decision of this
    kind is ``holds``, so its kappa is 0 or undefined by construction; raw agreement is the figure.

Sampling: an item is drawn when its hash ``sha256(SEED|kind|key)`` is among the lowest
``round(FRACTION * n)`` of its kind; the sheet lists them in hash order, which is random. Hashing (not
a shuffled list) keeps an item's draw independent of which other items exist, so a relabelling that
adds or removes decisions changes the sample only at its edges. Sheet items carry ``ref`` (the hash) and
an opaque id, never the question id of a question item (``u03``/``n05`` would reveal the decision).

    python -m rag_lib.labels.review sheet        # writes data/benchmark/blind_review_sheet.yaml
    python -m rag_lib.labels.review agreement    # kappa per kind, disagreements, resolutions still missing

:mod:`.decisions` enumerates the decisions and draws the sample, :mod:`.sheet` writes the blind sheet,
:mod:`.review` compares the reviewer's calls with the first decisions; the command line is :mod:`.__main__`.
"""
