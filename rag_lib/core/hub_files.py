"""Where a Hugging Face model's files are on this machine: ``$RAG_MODELS_DIR`` or the Hugging Face
cache. Shared by embedders and rerankers (one lookup); nothing here downloads."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rag_lib.core.config import shown_path


def models_dir(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The explicit model folder: an argument, else ``$RAG_MODELS_DIR``, else none."""
    value = explicit if explicit is not None else os.environ.get("RAG_MODELS_DIR")
    return Path(value) if value else None


def local_folder_name(hf_id: str) -> str:
    """``BAAI/bge-m3`` -> ``BAAI__bge-m3`` (the folder under RAG_MODELS_DIR)."""
    return hf_id.replace("/", "__")


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache, read from the environment at call time (tests change it)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "huggingface"
    return Path(home).expanduser() / "hub"


@dataclass(frozen=True)
class HubFiles:
    """Where the files of one Hugging Face model were found (``paths`` is empty when they were not)."""

    paths: dict[str, Path]
    source: str  # "RAG_MODELS_DIR" or "huggingface-cache"
    revision: str  # snapshot commit or "local folder"
    tried: tuple[str, ...]  # where we looked, for the error message
    target: Path  # where a user may put the files by hand


def locate_hub_files(hf_id: str, revision: str, required: list[str],
                     folder: str | os.PathLike[str] | None = None) -> HubFiles:
    """Find ``required`` repository files of ``hf_id`` in ``<models_dir>/<hf-id with / as __>/``,
    then in the Hugging Face cache (``local_files_only``: nothing is downloaded)."""
    tried: list[str] = []
    root = models_dir(folder)
    target = (root or Path("$RAG_MODELS_DIR")) / local_folder_name(hf_id)
    if root is not None:
        paths = {rel: _find(target, rel) for rel in required}
        missing = [rel for rel, path in paths.items() if path is None]
        if not missing:
            return HubFiles({k: v for k, v in paths.items() if v}, "RAG_MODELS_DIR", "local folder", (), target)
        tried.append(f"{shown_path(target)} (missing {', '.join(missing)})")
    else:
        tried.append("RAG_MODELS_DIR is not set")
    cache = hf_cache_dir()
    try:
        from huggingface_hub import snapshot_download

        snapshot = Path(snapshot_download(hf_id, revision=revision, cache_dir=cache, allow_patterns=required,
                                          local_files_only=True))
    except ImportError:
        tried.append("the Hugging Face cache (huggingface_hub is not installed)")
    except Exception as exc:  # LocalEntryNotFoundError and kin: nothing usable cached
        tried.append(f"the Hugging Face cache {shown_path(cache)} ({type(exc).__name__})")
    else:
        missing = [rel for rel in required if not (snapshot / rel).is_file()]
        if not missing:
            return HubFiles({rel: snapshot / rel for rel in required}, "huggingface-cache", snapshot.name, (), target)
        tried.append(f"the Hugging Face cache {shown_path(snapshot)} (missing {', '.join(missing)})")
    return HubFiles({}, "", "", tuple(tried), target)


def _find(folder: Path, rel: str) -> Path | None:
    # Accept the repository layout (onnx/model.onnx) or a flat folder (model.onnx).
    for candidate in (folder / rel, folder / Path(rel).name):
        if candidate.is_file():
            return candidate
    return None
