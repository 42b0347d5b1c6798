"""The declared mechanisms, one module each; importing this package registers every one of them.

Adding a mechanism = one module here (an ``@mechanism`` builder) + one run line in ``config.yaml``:
modules are found, not listed, so there is no third place to forget.
"""

from __future__ import annotations

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
