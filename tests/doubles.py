"""Stand-ins for a model and its document matrix, shared by the retrieval tests (no model is loaded)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


class Matrix:
    """Document vectors, L2-normalised, with their chunk ids (the shape of an EmbeddingMatrix)."""

    def __init__(self, ids: list[str], vectors: np.ndarray) -> None:
        self.ids = tuple(ids)
        self.vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


class FixedEmbedder:
    """Returns a fixed vector per known query (a stand-in for a real model)."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.array([self.table[t] for t in texts], dtype=np.float32)


class LoopbackServer:
    """An HTTP server on 127.0.0.1 whose every POST is answered by ``respond(path, body) -> (status, body)``
    (a stand-in for an OpenAI-compatible endpoint); ``url`` ends in ``/v1``; :meth:`close` stops it."""

    def __init__(self, respond: Callable[[str, bytes], tuple[int, bytes]]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                status, body = respond(self.path, self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
