"""The published request schemas refuse what the parsers refuse, item by item.

A list field's constraints on its items (a tag's pattern and length, an id's
minimum) are checked by the parser; a client generated from the OpenAPI
document must see the same rule, so every list field of every declared body
is tried with one item that breaks each of its constraints.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from board.server.api.table import all_routes
from board.server.errors import BoardError
from board.server.validation import declared, json_schema, parse_body


def _breaking_items(item_kind: Any, meta: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """One item per constraint, each breaking only that one."""
    if item_kind is str:
        if meta.get("max_len") is not None:
            yield "max_len", "a" * (meta["max_len"] + 1)
        if meta.get("pattern") is not None:
            yield "pattern", "\N{SNOWMAN}ab"  # JSON Schema patterns search: only an anchored one refuses it
    if item_kind is int:
        if meta.get("min") is not None:
            yield "min", int(meta["min"]) - 1
        if meta.get("max") is not None:
            yield "max", int(meta["max"]) + 1


def _cases() -> Iterator[Any]:
    seen = set()
    for route in all_routes():
        if route.body is None or route.body in seen:
            continue
        seen.add(route.body)
        for name, kind, meta, _ in declared(route.body):
            kind = typing.get_args(kind)[0] if type(None) in typing.get_args(kind) else kind
            if typing.get_origin(kind) is not list:
                continue
            for rule, item in _breaking_items(typing.get_args(kind)[0], meta):
                yield pytest.param(route.body, name, item, id=f"{route.body.__name__}.{name}.{rule}")


CASES = list(_cases())


def test_there_are_list_item_rules_to_check() -> None:
    names = {case.id for case in CASES}
    assert "PostMessage.tags.pattern" in names and any(".trigger_ids.min" in n for n in names)


@pytest.mark.parametrize(("body", "name", "item"), CASES)
def test_a_bad_list_item_is_refused_by_parser_and_schema_alike(body: type, name: str, item: Any) -> None:
    schema = json_schema(body)
    items = schema["properties"][name]
    items = next((s for s in items.get("anyOf", [items]) if s.get("type") == "array"), items)["items"]
    assert not Draft202012Validator(items).is_valid(item), f"the schema of {name}[] admits {item!r}"
    required = {n: _minimal(k, m) for n, k, m, needed in declared(body) if needed and n != name}
    with pytest.raises(BoardError) as refused:
        parse_body(body, required | {name: [item]})
    assert refused.value.details.get("field") == f"{name}[0]"


def _minimal(kind: Any, meta: Mapping[str, Any]) -> Any:
    """A value of a required field that its checks accept, so only the list item is wrong."""
    if meta.get("choices"):
        return meta["choices"][0]
    return {str: "ab", int: 1, bool: False}.get(kind, [] if typing.get_origin(kind) is list else {})


def test_a_text_field_s_pattern_matches_the_whole_value_in_the_schema_too() -> None:
    """The parser fullmatches a pattern; the published one must not merely find it inside."""
    checked = 0
    for route in all_routes():
        for name, kind, meta, _ in declared(route.body) if route.body is not None else ():
            kind = typing.get_args(kind)[0] if type(None) in typing.get_args(kind) else kind
            if meta.get("pattern") is None or kind is not str:
                continue
            assert route.body is not None
            field = json_schema(route.body)["properties"][name]
            field = next(s for s in field.get("anyOf", [field]) if s.get("type") == "string")
            assert not Draft202012Validator(field).is_valid("\N{SNOWMAN}ab"), f"{route.body.__name__}.{name}"
            checked += 1
    assert checked


def test_a_text_that_may_not_be_blank_is_refused_blank_by_parser_and_schema_alike() -> None:
    """A required reason or note of only white space: the parser refuses it, naming the field,
    and the published schema does too, while it admits one that says something."""
    checked = set()
    for route in all_routes():
        for name, kind, meta, _ in declared(route.body) if route.body is not None else ():
            if meta.get("blank") is not False or kind is not str:
                continue
            assert route.body is not None
            field = json_schema(route.body)["properties"][name]
            assert not Draft202012Validator(field).is_valid(" \n\t"), f"{route.body.__name__}.{name}"
            assert Draft202012Validator(field).is_valid(" why "), f"{route.body.__name__}.{name}"
            required = {n: _minimal(k, m) for n, k, m, needed in declared(route.body) if needed and n != name}
            with pytest.raises(BoardError) as refused:
                parse_body(route.body, required | {name: " \n\t"})
            assert refused.value.details.get("field") == name
            checked.add(f"{route.body.__name__}.{name}")
    assert {"Rejection.note", "DocumentWrite.reason", "DisputeRequest.reason"} <= checked
