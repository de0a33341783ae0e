"""What a free-form JSON value must be for the board to store it and read it back.

Python's ``json`` accepts things a standard parser refuses, or that the board
itself cannot send again: ``NaN`` and ``Infinity`` (and ``1e400``, which reads
as infinity), lone UTF-16 surrogates (``"\\ud800"`` decodes to a string that
cannot be encoded as UTF-8), and nesting deep enough to exhaust the stack when
the value is encoded for a reply. The edge refuses such values
(``validation.py``) and the store's row decoders treat a stored one as
unreadable; both ask :func:`problem`, so the two cannot disagree.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

#: The deepest nesting of objects and arrays in one value (the value itself is level 1).
MAX_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """True when ``text`` holds a UTF-16 surrogate (decoded JSON only ever holds lone ones)."""
    return _SURROGATE.search(text) is not None


def _step(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    shown = _SURROGATE.sub("\ufffd", key)[:40]
    return f"{path}.{shown}"


def problem(value: Any, path: str = "") -> str | None:
    """Why ``value`` would not survive a round trip through a strict JSON parser, or None.

    The answer names where in ``value`` the fault is (``path`` is its name), and
    never repeats the offending characters, so it is safe to send back.
    """
    stack: list[tuple[str, Any, int]] = [(path, value, 1)]
    while stack:
        where, item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return f"nests deeper than {MAX_DEPTH} levels of objects and arrays (at {where})"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if isinstance(key, str) and has_surrogate(key):
                    return f"has a lone UTF-16 surrogate in a key (in {where or 'the value'})"
                stack.append((_step(where, key), child, depth + 1))
        elif isinstance(item, str):
            if has_surrogate(item):
                return f"has a lone UTF-16 surrogate (at {where})"
        elif isinstance(item, float) and not math.isfinite(item):
            return f"has a number JSON cannot hold, NaN or infinite (at {where})"
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_loads(text: str | bytes) -> Any:
    """Decode ``text`` as a standard parser would, refusing what :func:`problem` refuses.

    Raises ``ValueError`` (a ``RecursionError`` from deep nesting becomes one too).
    """
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("nested too deeply to decode") from None
    fault = problem(value)
    if fault is not None:
        raise ValueError(fault)
    return value


class Encoded(dict[str, Any]):
    """A JSON object together with its encoding, which every answer holding it reuses as is.

    An event's message is encoded once, and the answers of every waiter it wakes splice
    those bytes in (``orjson.Fragment``) instead of encoding the same fields again. The
    object reads as the dict it encodes; it must not be changed after it is made.
    """

    __slots__ = ("json",)

    def __init__(self, value: dict[str, Any]) -> None:
        super().__init__(value)
        self.json = encode(value)


class EncodedList(list[Any]):
    """A JSON array with its encoding, as :class:`Encoded` is an object with its own.

    A page's items are encoded once to measure them against the byte cap, and the
    answer holding them splices that encoding in.
    """

    __slots__ = ("json",)

    def __init__(self, items: list[Any], json: bytes) -> None:
        super().__init__(items)
        self.json = json


def _spliced(value: Any) -> Any:
    """orjson's hook for subclasses of built-in types: an encoded value's bytes, or the plain value."""
    if isinstance(value, Encoded | EncodedList):
        return orjson.Fragment(value.json)
    base: type[Any]
    for base in (dict, list, str, int, float):
        if isinstance(value, base):
            return base(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


# Without OPT_NON_STR_KEYS, which makes orjson encode a page of messages about 1.6 times
# slower: the board's answers key their objects by strings, and a dict keyed otherwise is
# refused and falls back to the standard library, which writes the same bytes for it.
_OPTIONS = orjson.OPT_PASSTHROUGH_SUBCLASS


def encode(value: Any) -> bytes:
    """Compact JSON as the board answers it, UTF-8 (as is), no spaces.

    orjson encodes a page of messages several times faster than the standard
    library, on the event loop where every answer is encoded; a value it refuses
    (an integer past 64 bits, a key that is not a string) is encoded by the standard
    library instead.
    """
    try:
        return orjson.dumps(value, default=_spliced, option=_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def dumps(value: Any) -> str:
    """:func:`encode` as text."""
    return encode(value).decode()


def encoded_size(value: Any) -> int:
    """The bytes :func:`encode` gives for ``value``."""
    return len(encode(value))
