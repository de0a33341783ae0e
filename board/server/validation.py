"""Declared input types: request bodies and query strings parsed into dataclasses.

A service declares its input as a dataclass whose fields carry constraints in
their metadata (made with :func:`arg`). :func:`parse_body` and
:func:`parse_query` refuse unknown fields, wrong types and values out of range
with a message that says what to change; :func:`json_schema` turns the same
declaration into the OpenAPI schema, so the contract and the check cannot drift.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, Union

from .clock import iso, parse_time
from .errors import InvalidArgument, LimitExceeded
from .jsonvalues import has_surrogate, problem

T = TypeVar("T")

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def arg(
    default: Any = dataclasses.MISSING,
    *,
    help: str = "",
    min: float | None = None,
    max: float | None = None,
    min_len: int | None = None,
    max_len: int | None = None,
    pattern: str | None = None,
    choices: tuple[str, ...] | None = None,
    max_items: int | None = None,
    limit: bool = False,
    multiline: bool = False,
    time: bool = False,
    blank: bool = True,
    name: str | None = None,
) -> Any:
    """A dataclass field with constraints; ``limit=True`` makes a too-long value LIMIT_EXCEEDED.

    ``blank=False`` refuses a text that is empty or only white space: a required reason
    or note must say something (a field with a ``pattern`` says what it takes there).

    ``time=True`` takes an RFC 3339 time and keeps it as stored (UTC, seconds).

    ``name`` is the field's name on the wire when Python cannot spell it (``from``).
    """
    meta = {
        "name": name,
        "help": help,
        "min": min,
        "max": max,
        "min_len": min_len,
        "max_len": max_len,
        "pattern": re.compile(pattern) if pattern else None,
        "choices": choices,
        "max_items": max_items,
        "limit": limit,
        "multiline": multiline,
        "time": time,
        "blank": blank,
    }
    if isinstance(default, list | dict):
        factory = type(default)
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of a declared type, worked out once per type."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


_WIRE_FIELDS: dict[type, dict[str, dataclasses.Field[Any]]] = {}


def _wire_fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    """The fields of ``cls`` by the names callers use, worked out once per type."""
    if cls not in _WIRE_FIELDS:
        _WIRE_FIELDS[cls] = {f.metadata.get("name") or f.name: f for f in dataclasses.fields(cls)}
    return _WIRE_FIELDS[cls]


@functools.cache
def _unwrap_optional(kind: Any) -> tuple[Any, bool]:
    """``X | None`` as ``(X, True)``, anything else as ``(kind, False)``; once per declared type."""
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        members = [k for k in typing.get_args(kind) if k is not type(None)]
        if len(members) == 1:
            return members[0], True
    return kind, False


def _type_name(kind: Any) -> str:
    origin = typing.get_origin(kind)
    if origin is list:
        return f"a list of {_type_name(typing.get_args(kind)[0])}s"
    names = {str: "string", int: "whole number", float: "number", bool: "boolean", dict: "object"}
    return names.get(kind, getattr(kind, "__name__", str(kind)))


def the(name: str, *, query: bool = False) -> str:
    """A field as a refusal's sentence starts with it, unquoted: ``The body``, and a name that
    is no plain word (a letter is none) called a field, ``The field commits[0].sha``, ``The
    field q``. A ``query`` string's names are parameters (``since``, ``before``, ``all``),
    mostly no nouns: ``The parameter since`` (the name stays as sent, and ``details.field``
    has it for programs)."""
    if query:
        return f"The parameter {name}"
    return f"The {name}" if name.isalpha() and len(name) > 1 else f"The field {name}"


def figure(value: float) -> str:
    """A count or bound as a person reads it: thousands separated, a whole float without its ``.0``."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,}"
    return f"{int(value):,}"


def too_large(what: str, size: int, most: int, unit: str) -> str:
    """The refusal of a size past its limit: "The body is 16,053 characters; at most 16,000 are
    allowed." ``what`` as the sentence starts with it (:func:`the` for a field); items are had."""
    verb = "has" if unit == "items" else "is"
    return f"{what} {verb} {figure(size)} {unit}; at most {figure(most)} are allowed."


def _check_string(name: str, value: str, meta: Mapping[str, Any], query: bool) -> str:
    if has_surrogate(value):
        raise InvalidArgument(
            f"{the(name, query=query)} has a lone UTF-16 surrogate; send text that is valid Unicode.",
            field=name,
        )
    if not meta.get("multiline") and ("\n" in value or "\r" in value):
        raise InvalidArgument(f"{the(name, query=query)} must be one line.", field=name)
    value = value.replace("\r\n", "\n")
    if _CONTROL.search(value):
        raise InvalidArgument(
            f"{the(name, query=query)} contains control characters; remove them.", field=name
        )
    if meta.get("blank") is False and not value.strip():
        raise InvalidArgument(f"{the(name, query=query)} is blank; write something in it.", field=name)
    if meta.get("max_len") is not None and len(value) > meta["max_len"]:
        error = LimitExceeded if meta.get("limit") else InvalidArgument
        raise error(
            too_large(the(name, query=query), len(value), meta["max_len"], "characters"),
            field=name,
            limit=meta["max_len"],
        )
    if meta.get("min_len") is not None and len(value) < meta["min_len"]:
        least = meta["min_len"]
        characters = "character" if least == 1 else "characters"
        raise InvalidArgument(
            f"{the(name, query=query)} must have at least {figure(least)} {characters}.", field=name
        )
    if meta.get("pattern") is not None and not meta["pattern"].fullmatch(value):
        raise InvalidArgument(
            f"{the(name, query=query)} must match {meta['pattern'].pattern}; got {value[:80]!r}.", field=name
        )
    if meta.get("choices") is not None and value not in meta["choices"]:
        raise InvalidArgument(
            f"{the(name, query=query)} must be one of {', '.join(meta['choices'])}; got {value[:80]!r}.",
            field=name,
        )
    if meta.get("time"):
        return stored_time(name, value, query=query)
    return value


def _check(name: str, kind: Any, value: Any, meta: Mapping[str, Any], query: bool) -> Any:
    kind, optional = _unwrap_optional(kind)
    if value is None:
        if optional:
            return None
        raise InvalidArgument(f"{the(name, query=query)} may not be null.", field=name)
    origin = typing.get_origin(kind)
    if origin is list:
        if not isinstance(value, list):
            raise InvalidArgument(f"{the(name, query=query)} must be {_type_name(kind)}.", field=name)
        if meta.get("max_items") is not None and len(value) > meta["max_items"]:
            raise LimitExceeded(
                too_large(f"{the(name, query=query)} list", len(value), meta["max_items"], "items"),
                field=name,
                limit=meta["max_items"],
            )
        (item_kind,) = typing.get_args(kind)
        item_meta = _item_meta(meta)
        return [_check(f"{name}[{i}]", item_kind, item, item_meta, query) for i, item in enumerate(value)]
    if origin is dict or kind is dict:
        if not isinstance(value, dict):
            raise InvalidArgument(f"{the(name, query=query)} must be an object.", field=name)
        return _check_json(name, value, query)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return parse_body(kind, value, prefix=f"{name}.", query=query)
    if kind is bool:
        if not isinstance(value, bool):
            raise InvalidArgument(f"{the(name, query=query)} must be true or false.", field=name)
        return value
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidArgument(f"{the(name, query=query)} must be a {_type_name(kind)}.", field=name)
        if kind is int and (isinstance(value, float) and not value.is_integer()):
            raise InvalidArgument(f"{the(name, query=query)} must be a whole number.", field=name)
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidArgument(f"{the(name, query=query)} must be a finite number.", field=name)
        value = kind(value)
        if kind is int and not INT64_MIN <= value <= INT64_MAX:
            raise InvalidArgument(f"{the(name, query=query)} is out of range.", field=name)
        if meta.get("min") is not None and value < meta["min"]:
            raise InvalidArgument(
                f"{the(name, query=query)} must be at least {figure(meta['min'])}.", field=name
            )
        if meta.get("max") is not None and value > meta["max"]:
            raise InvalidArgument(
                f"{the(name, query=query)} must be at most {figure(meta['max'])}.", field=name
            )
        return value
    if kind is str:
        if not isinstance(value, str):
            raise InvalidArgument(f"{the(name, query=query)} must be a string.", field=name)
        return _check_string(name, value, meta, query)
    if kind is Any:
        return _check_json(name, value, query)
    raise TypeError(f"unsupported field type {kind!r} for {name}")


def _check_json(name: str, value: Any, query: bool) -> Any:
    """A free-form value (an object, or ``Any``) the board can store and send back unchanged."""
    fault = problem(value, name)
    if fault is not None:
        raise InvalidArgument(f"{the(name, query=query)} {fault}; send standard JSON.", field=name)
    return value


def parse_body(cls: type[T], data: Any, *, prefix: str = "", query: bool = False) -> T:
    """Build ``cls`` from a decoded JSON object, strictly; ``query``: a query string's (refusals
    call its names parameters, :func:`the`)."""
    if not isinstance(data, dict):
        raise InvalidArgument(f"Expected a JSON object{' for ' + prefix[:-1] if prefix else ''}.")
    hints = _hints(cls)
    fields = _wire_fields(cls)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        shown = _shown(prefix + unknown[0])
        raise InvalidArgument(f"Unknown field {shown}; known fields: {', '.join(fields)}.", field=shown)
    values = {}
    for name, f in fields.items():
        if name in data:
            values[f.name] = _check(prefix + name, hints[f.name], data[name], f.metadata, query)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise InvalidArgument(f"{the(prefix + name, query=query)} is required.", field=prefix + name)
    return cls(**values)


def _shown(name: str) -> str:
    """A caller's name safe to repeat in an answer: no lone surrogate, at most 80 characters."""
    return "".join("\ufffd" if has_surrogate(c) else c for c in name[:80])


def _from_text(name: str, kind: Any, text: str, query: bool) -> Any:
    kind, _ = _unwrap_optional(kind)
    if kind is bool:
        if text.lower() in ("1", "true", "yes"):
            return True
        if text.lower() in ("0", "false", "no"):
            return False
        raise InvalidArgument(f"{the(name, query=query)} must be true or false.", field=name)
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            raise InvalidArgument(
                f"{the(name, query=query)} must be a {_type_name(kind)}.", field=name
            ) from None
    if typing.get_origin(kind) is list:
        return [part for part in text.split(",") if part]
    return text


def parse_query(cls: type[T], query: Mapping[str, str], *, form: bool = False) -> T:
    """Build ``cls`` from query-string parameters (each given at most once). A posted ``form``
    is text too, read the same way, but its names are a body's fields, and refusals call them so."""
    hints = _hints(cls)
    known = _wire_fields(cls)
    data: dict[str, Any] = {}
    for name in query:
        if name not in known:
            raise InvalidArgument(
                f"Unknown parameter {_shown(name)}; known parameters: {', '.join(sorted(known))}.",
                field=_shown(name),
            )
        data[name] = _from_text(name, hints[known[name].name], query[name], not form)
    return parse_body(cls, data, query=not form)


def _item_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A list field's constraints on each of its items: all but its own length."""
    return {k: v for k, v in meta.items() if k != "max_items"}


def json_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema of a declared input type, for the OpenAPI document."""
    hints = _hints(cls)
    props: dict[str, Any] = {}
    required = []
    for name, f in _wire_fields(cls).items():
        props[name] = _schema_of(hints[f.name], f.metadata)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(name)
        elif f.default is not dataclasses.MISSING and f.default is not None:
            props[name]["default"] = f.default
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _schema_of(kind: Any, meta: Mapping[str, Any]) -> dict[str, Any]:
    kind, optional = _unwrap_optional(kind)
    origin = typing.get_origin(kind)
    schema: dict[str, Any]
    if origin is list:
        item_meta = {k: v for k, v in _item_meta(meta).items() if k != "help"}
        schema = {"type": "array", "items": _schema_of(typing.get_args(kind)[0], item_meta)}
        if meta.get("max_items") is not None:
            schema["maxItems"] = meta["max_items"]
    elif dataclasses.is_dataclass(kind):
        schema = json_schema(kind)  # type: ignore[arg-type]
    else:
        names = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}
        schema = {"type": names[kind]} if kind in names else {}
        if kind is str:
            for key, name in (("max_len", "maxLength"), ("min_len", "minLength")):
                if meta.get(key) is not None:
                    schema[name] = meta[key]
            if meta.get("pattern") is not None:
                # The parser matches the whole value; a JSON Schema pattern only searches.
                schema["pattern"] = f"^(?:{meta['pattern'].pattern})$"
            elif meta.get("blank") is False:
                schema["pattern"] = r"\S"  # searched for: one character that is not white space
            if meta.get("choices") is not None:
                schema["enum"] = list(meta["choices"])
            if meta.get("time"):
                schema["format"] = "date-time"
        for key, name in (("min", "minimum"), ("max", "maximum")):
            if meta.get(key) is not None and kind in (int, float):
                schema[name] = meta[key]
        if kind is int:
            schema.setdefault("minimum", INT64_MIN)
            schema.setdefault("maximum", INT64_MAX)
    if meta.get("help"):
        schema["description"] = meta["help"]
    if optional:
        schema = {"anyOf": [schema, {"type": "null"}]}
    return schema


def declared(cls: type) -> list[tuple[str, Any, Mapping[str, Any], bool]]:
    """Each field of a declared input type: wire name, type, constraints and whether it is required.

    For code that generates inputs from the declarations (the body fuzzer).
    """
    hints = _hints(cls)
    return [
        (
            name,
            hints[f.name],
            f.metadata,
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for name, f in _wire_fields(cls).items()
    ]


def check_new_name(what: str, name: str, field: str) -> None:
    """A name the board is asked to make (a handle, a workspace's or a channel's slug) starts with
    a letter or digit: ``..`` would be a dot segment in every URL naming it, which browsers and
    HTTP clients resolve away (the thing could not be opened, changed or revoked there), and a
    leading ``-`` reads as an option where a command takes the name. Names made before stay usable.
    """
    if not name[:1].isascii() or not name[:1].isalnum():
        raise InvalidArgument(f"A new {what} starts with a letter or digit; got {name[:40]!r}.", field=field)


def whole_number(name: str, text: str, *, query: bool = False) -> int:
    """A positive whole number given as text (a path segment, a page's parameter), or INVALID_ARGUMENT
    naming it."""
    if not text.isdigit() or len(text) > 18:
        raise InvalidArgument(f"{the(name, query=query)} must be a positive whole number.")
    return int(text)


def rfc3339(name: str, text: str | None, *, query: bool = False) -> str | None:
    """A time a caller gave, as stored (RFC 3339 UTC, seconds), or INVALID_ARGUMENT naming it."""
    return None if text is None else stored_time(name, text, query=query)


def stored_time(name: str, text: str, *, query: bool = False) -> str:
    """:func:`rfc3339` for a time that is there."""
    try:
        return iso(parse_time(text))
    except ValueError:
        raise InvalidArgument(f"{the(name, query=query)} must be an RFC 3339 time.", field=name) from None
