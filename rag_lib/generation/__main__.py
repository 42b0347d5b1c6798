"""``python -m rag_lib.generation stamp [DIR]``: add response checksums to trusted older call records.

A command of the package rather than of ``llm_calls`` itself: the package imports ``llm_calls``,
so running that module with ``-m`` would load it twice."""

from rag_lib.generation.llm_calls import main

raise SystemExit(main())
