"""``python -m rag_lib.corpus build|stats [--batch NAME]`` and ``python -m rag_lib.corpus import PATH --name NAME``."""

import sys

if sys.argv[1:2] == ["import"]:
    from rag_lib.corpus.importer import main

    raise SystemExit(main(sys.argv[2:]))

from rag_lib.corpus.build import main

raise SystemExit(main())
