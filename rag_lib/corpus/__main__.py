"""``python -m rag_lib.corpus build|stats [--batch NAME]``."""

from rag_lib.corpus.build import main

raise SystemExit(main())
