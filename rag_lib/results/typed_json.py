"""Typed results to and from JSON, by their type hints: dataclasses, lists, tuples, dicts, ``X | None``.

:func:`encode` turns a result (frozen dataclasses, nested) into the JSON value ``results.json``
stores. A field whose JSON key is not a Python name (a table column such as ``"in top 10"``)
declares its key with ``field(metadata=json_key("in top 10"))``; a key the writer leaves out while
there is nothing to say (no failures, no LLM) declares it with ``field(default=…,
metadata=optional_key())``. :func:`decode` builds the typed value back from JSON by the declared
types and fails, naming the path, on a missing key, an undeclared one, or a value of another type. A
type that involves ``Any`` is not checked at all; no result field has one (``tests/test_typed_results.py``
fails on any).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any, Union

JSON_KEY = "json"
OPTIONAL = "optional"

# One cell of a table row whose columns are named by data (a metric carrying its k, such as "hit@5", or a
# configuration per column): a row of such a table is ``dict[str, Scalar]``; every other row is a dataclass.
Scalar = str | int | float | bool | None


class ShapeError(ValueError):
    """A stored value does not have the shape its declared type says (the message names where)."""


def json_key(key: str) -> dict[str, str]:
    """Field metadata: store this field under ``key`` (for keys that are not Python names)."""
    return {JSON_KEY: key}


def optional_key(key: str | None = None) -> dict[str, Any]:
    """Field metadata: the stored object has this key only when the value is not the field's default (which
    the field must declare): :func:`encode` leaves it out then, and :func:`decode` gives the default when
    it is absent. For what a writer adds only when it has something to say (a variant's failures)."""
    return {OPTIONAL: True, **({JSON_KEY: key} if key is not None else {})}


def _key(f: dataclasses.Field[Any]) -> str:
    return f.metadata.get(JSON_KEY, f.name)


def _left_out(f: dataclasses.Field[Any], value: Any) -> bool:
    """Whether ``value`` of field ``f`` is not stored: an optional key holding its default."""
    if not f.metadata.get(OPTIONAL):
        return False
    if f.default is not dataclasses.MISSING:
        return bool(value == f.default)
    if f.default_factory is not dataclasses.MISSING:
        return bool(value == f.default_factory())
    raise TypeError(f"{f.name} is an optional key without a default: declare the value its absence stands for")


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def field_types(cls: type) -> dict[str, Any]:
    """The declared type of each field of dataclass ``cls``."""
    return {f.name: _hints(cls)[f.name] for f in dataclasses.fields(cls)}


def encode(value: Any) -> Any:
    """``value`` as JSON: a dataclass becomes an object under its fields' JSON keys, a tuple a list."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_key(f): encode(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not _left_out(f, getattr(value, f.name))}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def decode(tp: Any, value: Any, where: str = "") -> Any:
    """``value`` (JSON) as type ``tp``; raises :class:`ShapeError` naming ``where`` when it does not fit."""
    if _involves_any(tp):  # still untyped (dict[str, Any] …): kept as stored, unchecked
        return value
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return decode(option, value, where)
            except ShapeError as exc:
                errors.append(str(exc))
        raise ShapeError("; ".join(errors) or f"{where or 'value'}: None where a value is declared")
    if dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, value, where)
    if origin is list:
        _expect(value, list, tp, where)
        return [decode(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        _expect(value, list, tp, where)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise ShapeError(f"{where}: {len(value)} values where {len(args)} are declared ({tp})")
        return tuple(decode(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True)))
    if origin is dict:
        _expect(value, dict, tp, where)
        return {k: decode(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if tp is float:  # JSON keeps 1.0 as written, but a figure may have been stored as an int
        _expect(value, int | float, tp, where)
        if isinstance(value, bool):
            raise ShapeError(f"{where}: {value!r} where a number is declared")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ShapeError(f"{where}: {value!r} where an int is declared")
        return value
    if tp in (str, bool):
        _expect(value, tp, tp, where)
        return value
    raise ShapeError(f"{where}: type {tp} is not one typed_json can read; declare it with dataclasses, list, "
                     "tuple, dict, str, int, float, bool or None")


def _expect(value: Any, kind: Any, tp: Any, where: str) -> None:
    if not isinstance(value, kind):
        raise ShapeError(f"{where or 'value'}: {type(value).__name__} where {tp} is declared")


def _decode_dataclass(cls: type, value: Any, where: str) -> Any:
    _expect(value, dict, cls.__name__, where)
    fields = {_key(f): f for f in dataclasses.fields(cls)}
    optional = {key for key, f in fields.items() if f.metadata.get(OPTIONAL)}
    missing, unknown = sorted(set(fields) - set(value) - optional), sorted(set(value) - set(fields))
    if missing or unknown:
        raise ShapeError(f"{where or cls.__name__}: " + " and ".join(
            ([f"lacks {', '.join(missing)}"] if missing else [])
            + ([f"has {', '.join(unknown)}, which {cls.__name__} does not declare"] if unknown else [])))
    hints = _hints(cls)
    return cls(**{f.name: decode(hints[f.name], value[key], f"{where}.{key}" if where else key)
                  for key, f in fields.items() if key in value})  # an absent optional key: its default


def untyped_fields(cls: type, seen: set[type] | None = None) -> list[str]:
    """``Class.field`` for every field of ``cls`` and the dataclasses it holds whose type involves ``Any``."""
    seen = seen if seen is not None else set()
    if cls in seen:
        return []
    seen.add(cls)
    out = []
    for name, tp in field_types(cls).items():
        if _involves_any(tp):
            out.append(f"{cls.__name__}.{name}")
        for inner in _dataclasses_in(tp):
            out.extend(untyped_fields(inner, seen))
    return out


def _involves_any(tp: Any) -> bool:
    return tp is Any or any(_involves_any(a) for a in typing.get_args(tp))


def _dataclasses_in(tp: Any) -> list[type]:
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return [tp]
    return [d for a in typing.get_args(tp) for d in _dataclasses_in(a)]
