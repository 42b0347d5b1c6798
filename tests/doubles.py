"""Stand-ins for a model and its document matrix, shared by the retrieval tests (no model is loaded)."""

from __future__ import annotations

import json
import threading
import time
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


Reply = tuple[int, dict[str, str], bytes, float]  # status, headers, body, delay before answering
JSON = {"Content-Type": "application/json"}


def completion(content: str, model: str = "fake-model") -> bytes:
    """An OpenAI chat-completion body whose first choice says ``content``."""
    return json.dumps({
        "id": "c", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }).encode()


class FakeServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 (``url`` ends in ``/v1``): answers each POST with the next
    scripted reply (the last one repeats), or with ``replies(body, headers)``; keeps every request body."""

    def __init__(self, replies: list[Reply] | Callable[[dict[str, Any], dict[str, str]], Reply]) -> None:
        self.replies = replies
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                if callable(server.replies):
                    status, headers, payload, delay = server.replies(body, dict(self.headers))
                else:
                    status, headers, payload, delay = server.replies[min(len(server.requests), len(server.replies)) - 1]
                time.sleep(delay)
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (timeout test)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
