"""``python -m rag_lib.generation stamp [DIR]``: add response checksums to trusted older call records.

A command of the package rather than of ``call_records`` itself (where :func:`main` lives; it moved
there from ``llm_calls``): the package imports ``call_records``, so running that module with ``-m``
would load it twice."""

from rag_lib.generation.call_records import main

raise SystemExit(main())
