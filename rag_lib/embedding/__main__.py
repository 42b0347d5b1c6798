"""The pinned vectors from the command line: merge a recording into ``data/vectors``, or check what is there.

    python -m rag_lib.embedding pin FOLDER    # a RAG_RECORD_VECTORS folder (what `make pin-vectors` does)
    python -m rag_lib.embedding verify        # every pinned file against its sha256 in data/vectors/pins.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_lib.embedding.pinned import PINS_DIR, PinnedVectors, manifest, pin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_lib.embedding", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    merge = sub.add_parser("pin", help="merge a RAG_RECORD_VECTORS folder into data/vectors")
    merge.add_argument("recorded", type=Path)
    sub.add_parser("verify", help="check every pinned file against its sha256")
    args = parser.parse_args(argv)
    if args.command == "pin":
        for key, entry in pin(args.recorded).items():
            print(f"{entry['model']} ({key[:16]}): {entry['rows']} vectors, "
                  f"{entry['vectors']['bytes'] + entry['keys']['bytes']:,} bytes, made by {entry['made_by']}")
        return 0
    for key in manifest(PINS_DIR):
        pinned = PinnedVectors.load(key)
        assert pinned is not None
        print(f"{pinned.provenance['model']} ({key[:16]}): {len(pinned.rows)} vectors, sha256 ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
