"""llama.cpp's OpenAI-compatible server on loopback, for the tests that talk to a real server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

READY_TIMEOUT_S = 120  # a loaded 2-core machine loads the model slowly


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(model: str, log_dir: Path, options: Sequence[str]) -> Iterator[str]:
    """Serve the local model ``model`` (``python -m llama_cpp.server``) as ``model`` on a free loopback
    port with the extra server ``options``; yield its ``/v1`` URL once it answers, and always stop it."""
    from rag_lib.generation.local_models import model_file

    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file(model)), "--model_alias", model,
               "--host", "127.0.0.1", "--port", str(port), *options]
    # The log goes to a file: llama.cpp logs a lot, and a full pipe would block the server.
    log = log_dir / "server.log"
    log_file = open(log, "w", encoding="utf-8")  # noqa: SIM115 - closed in the finally below
    process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server not ready after {READY_TIMEOUT_S} s: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log_file.close()
