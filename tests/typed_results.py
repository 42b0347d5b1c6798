"""Hand-made typed results for tests: only the fields a test reads, a blank value of its type elsewhere."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Union

from rag_lib.results.store import ExperimentResult
from rag_lib.results.typed_json import field_types


def blank(tp: Any) -> Any:
    """The emptiest value of type ``tp`` that its reader accepts: None where None is allowed (or the type is
    untyped), else "", 0, 0.0, False, an empty container, or a dataclass of blanks."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or (origin in (Union, types.UnionType) and type(None) in args):
        return None
    if origin in (Union, types.UnionType):
        return blank(args[0])
    if dataclasses.is_dataclass(tp):
        return tp(**{name: blank(t) for name, t in field_types(tp).items()})
    if origin is tuple and args and args[-1] is not Ellipsis:  # a fixed-length tuple: one blank per place
        return tuple(blank(a) for a in args)
    if origin in (list, dict, tuple):
        return origin()
    return {str: "", int: 0, float: 0.0, bool: False}.get(tp)


def partial_result(cls: type[ExperimentResult], **given: Any) -> Any:
    """A ``cls`` holding ``given`` and a :func:`blank` value elsewhere; a misspelt field fails."""
    types_ = field_types(cls)
    assert set(given) <= set(types_), sorted(set(given) - set(types_))
    return cls(**{name: given[name] if name in given else blank(tp) for name, tp in types_.items()})
