"""Download model files (embedders and rerankers) from the Hugging Face Hub (``make models``), where a
network allows it.

    python -m rag_lib.embedding.download --paper            # the casebook's models
    python -m rag_lib.embedding.download bge-m3 --dest DIR  # one model into DIR/BAAI__bge-m3/

Without ``--dest`` files go to the Hugging Face cache, where :mod:`rag_lib.embedding.files` finds
them offline. The embedding code itself never downloads.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_lib.core.hub_files import hf_cache_dir, local_folder_name
from rag_lib.embedding.base import EmbedderSpec, load_specs
from rag_lib.embedding.files import required_files
from rag_lib.rerank.base import RerankerSpec
from rag_lib.rerank.base import load_specs as load_reranker_specs


def download(spec: EmbedderSpec | RerankerSpec, dest: Path | None = None) -> Path:
    """Fetch the files ``spec`` lists; return the folder that holds them."""
    from huggingface_hub import snapshot_download

    local_dir = dest / local_folder_name(spec.hf_id) if dest else None
    return Path(
        snapshot_download(
            spec.hf_id, revision=spec.revision, allow_patterns=required_files(spec),
            cache_dir=None if local_dir else hf_cache_dir(), local_dir=local_dir,
        )
    )


def main(argv: list[str] | None = None) -> int:
    # Embedders and rerankers share the file layout (hf_id, revision, files), so one downloader serves both.
    specs: dict[str, EmbedderSpec | RerankerSpec] = {**load_specs(), **load_reranker_specs()}
    hub_models = sorted(name for name, spec in specs.items() if not getattr(spec, "package", None))
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("models", nargs="*", metavar="MODEL", help=f"any of: {', '.join(hub_models)}")
    parser.add_argument("--paper", action="store_true", help="the models the casebook ran (paper: true)")
    parser.add_argument("--dest", type=Path, help="write into DEST/<hf-id with / as __>/ (a RAG_MODELS_DIR)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.models) - set(hub_models))
    if unknown:
        parser.error(f"unknown or package-shipped model(s) {unknown}; choose from {hub_models}")
    names = list(dict.fromkeys([*args.models, *(n for n in hub_models if args.paper and specs[n].paper)]))
    if not names:
        parser.error("name a model or pass --paper")
    failed = []
    for name in names:
        spec = specs[name]
        print(f"{name}: {spec.hf_id}@{spec.revision} {required_files(spec)}", flush=True)
        try:
            folder = download(spec, args.dest)
        except Exception as exc:  # network, auth or disk: report every model, then fail
            failed.append(name)
            print(
                f"  FAILED ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})\n"
                f"  The Hugging Face Hub is not reachable from here (or the files moved). On a machine that "
                f"reaches it, run this command, then copy {', '.join(required_files(spec))} into "
                f"$RAG_MODELS_DIR/{local_folder_name(spec.hf_id)}/ on this one.",
                file=sys.stderr,
            )
        else:
            print(f"  ok: {folder}")
    if failed:
        print(f"{len(failed)} of {len(names)} models not downloaded: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
